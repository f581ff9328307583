#include "tensor/tensor.h"

#include <algorithm>
#include <cstring>
#include <memory>
#include <mutex>
#include <new>
#include <unordered_map>
#include <vector>

#include "common/memory_budget.h"
#include "tensor/dispatch.h"
#include "tensor/narrow.h"

namespace mpa {

int64_t shape_numel(const Shape& shape) {
  constexpr int64_t kLimit = int64_t{1} << 62;
  int64_t n = 1;
  for (int64_t d : shape) {
    if (!(d >= 0)) fail("negative dimension " + std::to_string(d) + " in shape " + shape_str(shape));
    if (d == 0) return 0;
    if (!(n <= kLimit / d)) fail("shape " + shape_str(shape) + " has too many elements");
    n *= d;
  }
  return n;
}

uint64_t tensor_bytes(DType dtype, const Shape& shape) {
  const uint64_t numel = static_cast<uint64_t>(shape_numel(shape)), elem = std::max<size_t>(dtype_size(dtype), 1);
  return numel > UINT64_MAX / elem ? UINT64_MAX : numel * elem;
}

std::string shape_str(const Shape& shape) {
  if (shape.empty()) return "scalar";
  std::string s;
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) s += 'x';
    s += std::to_string(shape[i]);
  }
  return s;
}

namespace {

// Freed tensor buffers of up to kLargestCached bytes, kept by exact size for the next tensor of that size:
// a run allocates the same shapes node after node, and malloc/free of mid-size blocks (with glibc's
// consolidation) cost 10-20% of a small model's run. At most kCapacity bytes wait here; beyond that,
// buffers are freed. What waits counts in the process's peak memory: with 64 MB, ResNet-50's one-sample audit
// peaked 10 MB higher than with 32 and ran no faster; with 16, its audit ran 6% slower (bench/README). Shared by
// all threads; never destroyed, so tensors that outlive static destruction can still give their buffers back.
class StorageCache {
 public:
  static StorageCache& instance() {
    static StorageCache* cache = new StorageCache;
    return *cache;
  }
  // Charged to the memory budget until the last tensor on the block lets go; empty when over budget.
  std::shared_ptr<std::byte[]> allocate(size_t bytes) {
    if (!memory_budget::try_charge(bytes)) return nullptr;
    std::byte* block = bytes <= kLargestCached ? take_cached(bytes) : nullptr;
    if (!block) block = new (std::nothrow) std::byte[bytes];
    if (!block) {
      memory_budget::release(bytes);
      throw std::bad_alloc();
    }
    // Should the control block fail to allocate, shared_ptr hands the block to the deleter: nothing leaks.
    return std::shared_ptr<std::byte[]>(block, [this, bytes](std::byte* p) { give_back(p, bytes); });
  }

 private:
  // Under AddressSanitizer nothing is cached, so a use after free still reaches freed memory.
#if defined(__SANITIZE_ADDRESS__)
  static constexpr size_t kLargestCached = 0, kCapacity = 0;
#else
  static constexpr size_t kLargestCached = size_t{4} << 20, kCapacity = size_t{32} << 20;
#endif
  std::byte* take_cached(size_t bytes) {
    std::lock_guard<std::mutex> lock(mutex_);
    auto it = free_.find(bytes);
    if (it == free_.end() || it->second.empty()) return nullptr;
    std::byte* block = it->second.back();
    it->second.pop_back();
    cached_ -= bytes;
    return block;
  }
  // Runs in a deleter, which must not throw: a free list that cannot grow (bad_alloc) frees the block instead.
  void give_back(std::byte* block, size_t bytes) noexcept {
    memory_budget::release(bytes);
    if (bytes <= kLargestCached) try {
        std::lock_guard<std::mutex> lock(mutex_);
        if (cached_ + bytes <= kCapacity) {
          free_[bytes].push_back(block);
          cached_ += bytes;
          return;
        }
      } catch (...) {
      }
    delete[] block;
  }
  std::mutex mutex_;
  std::unordered_map<size_t, std::vector<std::byte*>> free_;
  size_t cached_ = 0;
};

}  // namespace

Tensor::Tensor(DType dtype, Shape shape) : dtype_(dtype), shape_(std::move(shape)), numel_(shape_numel(shape_)) {
  if (!(dtype_size(dtype) > 0)) fail("cannot allocate a tensor of type " + dtype_name(dtype));
  // numel is at most 2^62, times 8 bytes would wrap: refuse what no machine could hold anyway.
  if (!(numel_ <= (int64_t{1} << 62) / static_cast<int64_t>(dtype_size(dtype))))
    fail("a " + dtype_name(dtype) + " tensor of shape " + shape_str(shape_) + " is too large to allocate");
  const size_t bytes = std::max<size_t>(nbytes(), 1);
  storage_ = StorageCache::instance().allocate(bytes);
  if (!storage_) memory_budget::refuse("a " + dtype_name(dtype) + " tensor of shape " + shape_str(shape_), bytes);
}

Tensor Tensor::adopt(DType dtype, Shape shape, std::string bytes) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  if (!(bytes.size() == t.nbytes() && !bytes.empty()))
    fail("adopt: " + std::to_string(bytes.size()) + " bytes for " + shape_str(t.shape_) + " of " + dtype_name(dtype));
  const size_t charged = bytes.size();
  if (!memory_budget::try_charge(charged))
    memory_budget::refuse("a " + dtype_name(dtype) + " tensor of shape " + shape_str(t.shape_), charged);
  std::string* held = new (std::nothrow) std::string(std::move(bytes));
  if (!held) {
    memory_budget::release(charged);
    throw std::bad_alloc();
  }
  std::shared_ptr<std::string> owner(held, [charged](std::string* s) {
    delete s;
    memory_budget::release(charged);
  });
  t.storage_ = std::shared_ptr<std::byte[]>(owner, reinterpret_cast<std::byte*>(owner->data()));
  return t;
}

Tensor Tensor::on_device(DType dtype, Shape shape, Device device, std::shared_ptr<std::byte[]> bytes) {
  Tensor t;
  t.dtype_ = dtype;
  t.shape_ = std::move(shape);
  t.numel_ = shape_numel(t.shape_);
  t.device_ = device;
  t.storage_ = std::move(bytes);
  return t;
}

void* Tensor::device_raw(const Device& device) {
  if (!(device_ == device)) fail("a tensor on " + device_.name() + " was handed to " + device.name());
  return storage_.get();
}

const void* Tensor::device_raw(const Device& device) const {
  if (!(device_ == device)) fail("a tensor on " + device_.name() + " was handed to " + device.name());
  return storage_.get();
}

void Tensor::not_on_host() const {
  fail("a " + dtype_name(dtype_) + " tensor of shape " + shape_str(shape_) + " on " + device_.name() +
       " was read on the host without a transfer");
}

Tensor Tensor::zeros(DType dtype, Shape shape) {
  Tensor t(dtype, std::move(shape));
  std::memset(t.raw(), 0, t.nbytes());
  return t;
}

Tensor Tensor::reshaped(Shape shape) const {
  if (!(shape_numel(shape) == numel_))
    fail("cannot reshape " + shape_str(shape_) + " (" + std::to_string(numel_) + " elements) to " + shape_str(shape));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  return t;
}

Tensor Tensor::view(int64_t offset, Shape shape) const {
  const int64_t count = shape_numel(shape);
  if (!(offset >= 0 && count <= numel_ - offset))
    fail("a view of " + std::to_string(count) + " elements from element " + std::to_string(offset) +
         " of a tensor of " + std::to_string(numel_));
  Tensor t = *this;
  t.shape_ = std::move(shape);
  t.numel_ = count;
  // Aliasing: the view keeps the whole storage alive and points into it.
  t.storage_ =
      std::shared_ptr<std::byte[]>(storage_, storage_.get() + offset * static_cast<int64_t>(dtype_size(dtype_)));
  return t;
}

Tensor Tensor::clone() const {
  Tensor t(dtype_, shape_);
  if (nbytes() > 0) std::memcpy(t.raw(), raw(), nbytes());
  return t;
}

std::vector<int64_t> Tensor::to_int64_vector() const {
  std::vector<int64_t> out(static_cast<size_t>(numel_));
  if (dtype_is_narrow(dtype_)) {
    const uint8_t* p = static_cast<const uint8_t*>(raw());
    for (int64_t i = 0; i < numel_; ++i)
      out[static_cast<size_t>(i)] = static_cast<int64_t>(narrow_to_float(dtype_, p[i]));
    return out;
  }
  visit_dtype(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(raw());
    for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = static_cast<int64_t>(load(p[i]));
  });
  return out;
}

std::vector<double> Tensor::to_double_vector() const {
  std::vector<double> out(static_cast<size_t>(numel_));
  if (dtype_is_narrow(dtype_)) {
    const uint8_t* p = static_cast<const uint8_t*>(raw());
    for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = narrow_to_float(dtype_, p[i]);
    return out;
  }
  visit_dtype(dtype_, [&](auto tag) {
    using T = typename decltype(tag)::type;
    const T* p = static_cast<const T*>(raw());
    for (int64_t i = 0; i < numel_; ++i) out[static_cast<size_t>(i)] = static_cast<double>(load(p[i]));
  });
  return out;
}

void Tensor::check_type(DType requested) const {
  if (!(requested == dtype_)) fail("tensor holds " + dtype_name(dtype_) + ", accessed as " + dtype_name(requested));
}

}  // namespace mpa
