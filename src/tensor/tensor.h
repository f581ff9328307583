// A dense, row-major tensor. Storage is shared, so Reshape-like ops alias their input without a copy;
// ops never write into their inputs, which keeps sharing safe. A tensor lives on a device (tensor/device.h):
// the host's bytes are read with raw()/data(); a device tensor's only by the backend that owns them
// (device_raw), so a value that was not transferred fails loudly instead of being read as garbage.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "common/error.h"
#include "tensor/device.h"
#include "tensor/dtype.h"

namespace mpa {

using Shape = std::vector<int64_t>;

// Number of elements; fails (instead of overflowing) on negative dims or a product beyond 2^62.
int64_t shape_numel(const Shape& shape);
// Bytes of a tensor of this type and shape, saturating at UINT64_MAX (for budget checks of outside sizes).
uint64_t tensor_bytes(DType dtype, const Shape& shape);
std::string shape_str(const Shape& shape);  // "1x3x224x224", "scalar" for rank 0

class Tensor {
 public:
  Tensor() = default;
  // Allocates uninitialised storage for shape (every kernel writes all of its outputs).
  Tensor(DType dtype, Shape shape);
  static Tensor zeros(DType dtype, Shape shape);
  template <class T> static Tensor scalar(T value) {
    Tensor t(dtype_of<T>, {});
    *t.data<T>() = value;
    return t;
  }
  // A tensor over `bytes` laid out as `shape` of `dtype` (a model file's raw_data), without a copy. The
  // bytes must be aligned for the type where they lie, as a heap-allocated (not short) string's are.
  static Tensor adopt(DType dtype, Shape shape, std::string bytes);
  // A tensor over `bytes` a backend allocated on `device` (freed by the pointer's deleter with its last tensor).
  static Tensor on_device(DType dtype, Shape shape, Device device, std::shared_ptr<std::byte[]> bytes);
  template <class T> static Tensor from_vector(const std::vector<T>& values, Shape shape) {
    Tensor t(dtype_of<T>, std::move(shape));
    require(t.numel() == static_cast<int64_t>(values.size()), "from_vector: size does not match shape");
    for (size_t i = 0; i < values.size(); ++i) t.data<T>()[i] = values[i];
    return t;
  }

  DType dtype() const { return dtype_; }
  const Shape& shape() const { return shape_; }
  int rank() const { return static_cast<int>(shape_.size()); }
  int64_t dim(int axis) const { return shape_[static_cast<size_t>(axis)]; }
  int64_t numel() const { return numel_; }
  size_t nbytes() const { return static_cast<size_t>(numel_) * dtype_size(dtype_); }
  bool defined() const { return dtype_ != DType::Undefined; }

  const Device& device() const { return device_; }
  // The bytes of a host tensor; fails, naming the device, for a tensor elsewhere.
  void* raw() {
    if (!device_.is_host()) not_on_host();
    return storage_.get();
  }
  const void* raw() const {
    if (!device_.is_host()) not_on_host();
    return storage_.get();
  }
  // The bytes as the backend of `device` addresses them; fails for a tensor on another device.
  void* device_raw(const Device& device);
  const void* device_raw(const Device& device) const;
  template <class T> T* data() {
    check_type(dtype_of<T>);
    return static_cast<T*>(raw());
  }
  template <class T> const T* data() const {
    check_type(dtype_of<T>);
    return static_cast<const T*>(raw());
  }
  // Whether another tensor holds this storage too (a view, a node's constant value, a value of another stream).
  bool storage_shared() const { return storage_.use_count() > 1; }
  // Same storage, new shape (element count must match).
  Tensor reshaped(Shape shape) const;
  // The elements from `offset` on, as `shape`, in the same storage (a contiguous slice, without a copy).
  Tensor view(int64_t offset, Shape shape) const;
  // Deep copy (of a host tensor).
  Tensor clone() const;
  // Elements converted to int64 / double (for shape inputs, attributes-as-inputs, tests).
  std::vector<int64_t> to_int64_vector() const;
  std::vector<double> to_double_vector() const;

 private:
  void check_type(DType requested) const;
  [[noreturn]] void not_on_host() const;
  DType dtype_ = DType::Undefined;
  Device device_;
  Shape shape_;
  int64_t numel_ = 0;
  std::shared_ptr<std::byte[]> storage_;
};

}  // namespace mpa
