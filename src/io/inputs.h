// Builds a model's input samples from the CLI's input options: .npy / .pb files, images (with --preprocess),
// WAV audio and numbers per input, an .npz with one array per input, a folder with one sample per subfolder
// (the ONNX test data set layout), or seeded random values with per-input distributions. Sample i is the
// same on every machine and in every shard. Named symbolic dims (e.g. 'seq') are bound by the inputs given;
// every input sharing a name must agree, and random inputs take the bound sizes.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/preprocess.h"
#include "runtime/session.h"

namespace mpa {

struct InputOptions {
  std::vector<std::string> files;          // NAME=FILE (.npy .pb .jpg .jpeg .png .bmp .wav) or NAME=NUMBER
  std::string inputs;                      // FILE.npz, or a folder of sample subfolders
  bool random = false;                     // random values for every input not given otherwise
  int64_t samples = 1;                     // random samples (audit)
  uint64_t seed = 0;
  std::vector<std::string> shapes;         // NAME=1x3x224x224, fixes symbolic dims of random inputs
  std::vector<std::string> distributions;  // NAME=normal:MEAN,STD | uniform:LO,HI | int:LO,HI
  std::vector<std::string> preprocess;     // NAME:KEY=VALUE,... for image and WAV inputs (io/preprocess.h)
};

class SampleSource {
 public:
  SampleSource(const Graph& graph, InputOptions options);
  int64_t count() const { return count_; }
  TensorMap sample(int64_t index) const;
  std::string describe() const;

 private:
  struct Distribution {
    enum class Kind { Normal, Uniform, Integer } kind = Kind::Normal;
    double a = 0, b = 1;  // mean/std, or the range [a, b) / [a, b] for integers
  };
  using Sources = std::map<std::string, std::string>;  // input name -> where its value came from
  // Sizes of the named symbolic dims, from the given tensors and --shape; fails on conflicting sizes.
  std::map<std::string, int64_t> bind_symbolic_dims(const TensorMap& feeds, const Sources& sources) const;
  Tensor random_input(const ValueInfo& info, uint64_t stream, const std::map<std::string, int64_t>& dims) const;
  const Graph& graph_;
  InputOptions options_;
  TensorMap fixed_;                        // from --input and an .npz (shared by every sample)
  Sources sources_;                        // of fixed_
  std::vector<std::string> sample_dirs_;   // --inputs DIR
  std::map<std::string, Shape> shapes_;
  std::map<std::string, Distribution> distributions_;
  int64_t count_ = 1;
};

// The value of `--input NAME=TEXT` for an input declared as `declared`: a tensor file, an image, a WAV file
// (the last two shaped with `preprocess`, which may be null), or a number for a scalar input. Fails with
// one line naming the input and the file.
Tensor read_input_value(const ValueInfo& declared, const std::string& text, const Preprocess* preprocess);

// Parses "1x3x224x224" (also "1,3,224,224"); fails with a message naming `what`.
Shape parse_shape(const std::string& text, const std::string& what);

}  // namespace mpa
