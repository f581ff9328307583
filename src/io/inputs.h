// Builds a model's input samples from the CLI's input options: .npy / .pb files per input, an .npz with
// one array per input, a folder with one sample per subfolder (the ONNX test data set layout), or seeded
// random values with per-input distributions. Sample i is the same on every machine and in every shard.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "runtime/session.h"

namespace mpa {

struct InputOptions {
  std::vector<std::string> files;          // NAME=FILE.npy or NAME=FILE.pb
  std::string inputs;                      // FILE.npz, or a folder of sample subfolders
  bool random = false;                     // random values for every input not given otherwise
  int64_t samples = 1;                     // random samples (audit)
  uint64_t seed = 0;
  std::vector<std::string> shapes;         // NAME=1x3x224x224, fixes symbolic dims of random inputs
  std::vector<std::string> distributions;  // NAME=normal:MEAN,STD | uniform:LO,HI | int:LO,HI
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
  Tensor random_input(const ValueInfo& info, uint64_t stream) const;
  const Graph& graph_;
  InputOptions options_;
  TensorMap fixed_;                        // from --input files and an .npz (shared by every sample)
  std::vector<std::string> sample_dirs_;   // --inputs DIR
  std::map<std::string, Shape> shapes_;
  std::map<std::string, Distribution> distributions_;
  int64_t count_ = 1;
};

// Parses "1x3x224x224" (also "1,3,224,224"); fails with a message naming `what`.
Shape parse_shape(const std::string& text, const std::string& what);

}  // namespace mpa
