// Builds a model's input feeds from the CLI's input options: .npy / .pb files per input, an .npz with
// one array per input, or seeded random values, with symbolic dims fixed by --shape.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace mpa {

struct InputOptions {
  std::vector<std::string> files;   // NAME=FILE.npy or NAME=FILE.pb
  std::string npz;                  // FILE.npz
  bool random = false;              // random values for every input not given otherwise
  uint64_t seed = 0;
  std::vector<std::string> shapes;  // NAME=1x3x224x224, fixes symbolic dims of random inputs
};

TensorMap build_feeds(const Graph& graph, const InputOptions& options);

// Parses "1x3x224x224" (also "1,3,224,224"); fails with a message naming `what`.
Shape parse_shape(const std::string& text, const std::string& what);

}  // namespace mpa
