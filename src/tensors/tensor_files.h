// Where `mpaudit tensors` finds its tensors: .npy, .npz, ONNX TensorProto .pb and .safetensors files, given
// one by one or in folders (a folder of folders is a sequence of steps). Listing reads names only; each
// tensor is read on its own, after its declared size is checked against the bytes the file holds, so a
// run holds one tensor in memory at a time and a lying header fails instead of allocating.
#pragma once
#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "tensor/tensor.h"

namespace mpa::tensors {

// One tensor in a file: an .npy or .pb file is one tensor named by the file's stem; an .npz or
// .safetensors file holds tensors named by their keys (`member`).
struct TensorSource {
  std::string name;
  std::filesystem::path file;
  std::string member;  // key inside an .npz or .safetensors file; empty for .npy and .pb
  // "FILE" or "FILE[member]", as error messages and reports name the tensor.
  std::string describe() const;
};

// The tensors of one training step (or of the one set of tensors given).
struct Step {
  std::string name;
  std::vector<TensorSource> tensors;
};

// Whether `file` has an extension this reader takes (.npy .npz .pb .safetensors, any letter case).
bool is_tensor_file(const std::filesystem::path& file);

// The steps the command line names: a folder holding folders is one step per subfolder (natural name order:
// step_2 before step_10); a folder of tensor files is one step; files given directly form one step
// together, named "files". Files of other kinds inside folders are left out; given directly, refused.
// Fails on a missing path, a folder without tensors, or two tensors of one step with the same name.
std::vector<Step> find_steps(const std::vector<std::string>& paths);

// The tensors a file holds, in file order (for .npz and .safetensors from their directory or header).
std::vector<TensorSource> list_tensors(const std::filesystem::path& file);

// Reads tensors one at a time. Fails with one line naming the file and the tensor: truncated data, a bad
// header, a size larger than the file, an element type the runtime does not store. The last .safetensors
// file read stays open with its parsed header: a step reads its tensors file by file, and parsing a large
// header again for each of its tensors would cost more than the tensors.
class TensorReader {
 public:
  TensorReader();
  ~TensorReader();
  Tensor read(const TensorSource& source);

 private:
  struct OpenSafetensors;
  std::unique_ptr<OpenSafetensors> open_;
};

// a < b with digit runs compared as numbers ("step_2" < "step_10").
bool natural_less(const std::string& a, const std::string& b);

}  // namespace mpa::tensors
