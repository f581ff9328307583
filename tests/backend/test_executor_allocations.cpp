// The executor adds no allocation per node in steady state: a run of a chain of Identity nodes on scalars
// (whose kernels allocate nothing: they alias their input, and a scalar's shape is empty) allocates as much
// with 50 nodes as with 5. Counted by replacing the global operator new in this test binary (not under
// AddressSanitizer, which owns the allocator there).
#include <gtest/gtest.h>

#include <atomic>
#include <cstdlib>
#include <new>

#include "model/loader.h"
#include "runtime/session.h"
#include "support/model_builder.h"

namespace {
std::atomic<int64_t> allocations{0};
}  // namespace

#if !defined(__SANITIZE_ADDRESS__)
void* operator new(std::size_t bytes) {
  ++allocations;
  if (void* p = std::malloc(bytes ? bytes : 1)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
#endif

using namespace mpa;

namespace {

// Value names by append: GCC 12 warns falsely (-Wrestrict) on "literal" + std::string.
std::string value(int i) { return std::string(1, 'v').append(std::to_string(i)); }

Model identity_chain(int nodes) {
  test::ModelBuilder b(17);
  b.input(value(0), onnx::TensorProto::FLOAT, {});
  for (int i = 0; i < nodes; ++i) b.node("Identity", {value(i)}, {value(i + 1)});
  b.output(value(nodes));
  return load_model_from_bytes(b.bytes(), ".", "chain.onnx");
}

// Allocations of the second of two runs (the first warms caches up).
int64_t allocations_per_run(int nodes) {
  const Model model = identity_chain(nodes);
  const Session session(model.graph);
  const TensorMap feeds = {{"v0", Tensor::scalar(1.5f)}};
  session.run(feeds);
  const int64_t before = allocations;
  session.run(feeds);
  return allocations - before;
}

}  // namespace

TEST(Executor, AddsNoAllocationPerNode) {
#if defined(__SANITIZE_ADDRESS__)
  GTEST_SKIP() << "allocations are not counted under AddressSanitizer";
#endif
  const int64_t few = allocations_per_run(5), many = allocations_per_run(50);
  EXPECT_GT(few, 0) << "the counter is not counting";
  EXPECT_EQ(many, few) << "45 more nodes cost " << many - few << " more allocations";
}
