// What RNN, GRU and LSTM read from their node and inputs on every backend: the attributes (direction,
// hidden_size, activations with their alpha/beta, clip, layout) and the sequence's dimensions, with the inputs'
// shapes checked against them. The element math is kernels/recurrent.h; the CPU's run, ops/recurrent.h.
#pragma once
#include <string>
#include <vector>

#include "kernels/recurrent.h"
#include "ops/op.h"
#include "tensor/hd.h"

namespace mpa {

struct RecurrentAttrs {
  int directions = 1;  // 2 when bidirectional
  bool reverse_only = false;
  int64_t hidden = 0;
  float clip = 0;  // 0: none
  int64_t layout = 0;
  std::vector<RecurrentActivation> activations;  // per direction, `per_direction` functions each

  // Reads the attributes shared by the three ops; `defaults` are the activations' names for one direction.
  static RecurrentAttrs read(const OpInit& init, const std::vector<std::string>& defaults);
  const RecurrentActivation& activation(int direction, size_t which, size_t per_direction) const {
    return activations[size_t(direction) * per_direction + which];
  }
};

// LSTM's and GRU's attributes: the shared ones, read with the op's default activation functions, and its own.
struct LstmAttrs : RecurrentAttrs {
  bool input_forget = false;
  static LstmAttrs read(const OpInit& init);
};
struct GruAttrs : RecurrentAttrs {
  bool linear_before_reset = false;
  static GruAttrs read(const OpInit& init);
};

// Where the values of (direction d, batch row b, hidden unit j) lie in the initial and final states, and in
// Y at time t, in either layout; and which row of X (and of its projection) holds time t of batch row b.
// Plain index math for every backend (a CUDA kernel computes it per element).
struct RecurrentLayout {
  int64_t seq = 0, batch = 0, hidden = 0, directions = 1;
  bool batch_first = false;  // layout 1
  MPA_HD int64_t state_at(int64_t d, int64_t b, int64_t j) const {
    return (batch_first ? b * directions + d : d * batch + b) * hidden + j;
  }
  MPA_HD int64_t y_at(int64_t t, int64_t d, int64_t b, int64_t j) const {
    return (batch_first ? (b * seq + t) * directions + d : (t * directions + d) * batch + b) * hidden + j;
  }
  MPA_HD int64_t x_row(int64_t t, int64_t b) const { return batch_first ? b * seq + t : t * batch + b; }
};

// The sequence's dimensions, read from X after checking X, W, R, B, the initial states (initial_h, and
// initial_c for LSTM's 4 gates) and LSTM's peepholes P against them, all of element type `dtype`: what every
// backend's kernel checks first. sequence_lens is checked where it is read.
struct RecurrentDims {
  int64_t seq = 0, batch = 0, input = 0;
  static RecurrentDims of(const KernelContext& ctx, const RecurrentAttrs& attrs, int64_t gates, DType dtype);
  // initial_h / initial_c: [directions, batch, hidden], or [batch, directions, hidden] in layout 1.
  Shape state_shape(const RecurrentAttrs& attrs) const {
    return attrs.layout == 0 ? Shape{attrs.directions, batch, attrs.hidden}
                             : Shape{batch, attrs.directions, attrs.hidden};
  }
  RecurrentLayout layout(const RecurrentAttrs& attrs) const {
    return {seq, batch, attrs.hidden, attrs.directions, attrs.layout == 1};
  }
  // Y: [seq, directions, batch, hidden], or [batch, seq, directions, hidden] in layout 1.
  Shape y_shape(const RecurrentAttrs& attrs) const {
    return attrs.layout == 0 ? Shape{seq, attrs.directions, batch, attrs.hidden}
                             : Shape{batch, seq, attrs.directions, attrs.hidden};
  }
};

}  // namespace mpa
