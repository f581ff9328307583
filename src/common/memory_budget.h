// The memory budget (--max-memory): the most bytes of tensor data mpaudit holds at once on the host.
// Every host tensor is charged when allocated and credited when freed (src/tensor/tensor.cpp), so a model
// whose values outgrow the budget fails with one line naming the node instead of being killed by the
// kernel's OOM killer (Linux overcommits: `new` of 40 GB succeeds, touching it does not). Sizes that come
// from outside (declared shapes, --shape, image and .npy headers, resize targets, Loop growth) are checked
// with require() before anything is allocated or decoded, so the message names the file or option.
// Device memory is not charged: the device's own allocator refuses what does not fit there.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "common/error.h"

namespace mpa {

// Thrown when a size does not fit the budget; an Error like any other (exit code 2).
class MemoryBudgetExceeded : public Error {
 public:
  using Error::Error;
};

namespace memory_budget {

// The budget in bytes: --max-memory, else default_limit() (computed once, at first use).
int64_t limit();
void set_limit(int64_t bytes);
// 80% of the memory available when mpaudit starts: MemAvailable from /proc/meminfo, or what the cgroup
// (container, systemd slice) still allows, whichever is less. The 20% left over is for what the budget
// does not count: the model's protobuf, kernels' scratch buffers, the report.
int64_t default_limit();
// Memory available to this process now (the smaller of MemAvailable and the cgroup's room).
int64_t available();
// Bytes of host tensor data alive now.
int64_t in_use();

// Throws MemoryBudgetExceeded "<what> needs 12.0 GiB, more than the memory budget leaves: 9.3 GiB of 18.5 GiB
// (see --max-memory)" unless `bytes` more fit now.
void require(const std::string& what, uint64_t bytes);

// Tensor storage accounting: try_charge() takes `bytes` from the budget if they fit (else false: call refuse()),
// release() gives them back.
bool try_charge(uint64_t bytes) noexcept;
void release(uint64_t bytes) noexcept;
[[noreturn]] void refuse(const std::string& what, uint64_t bytes);

// "12.0 GiB", "512.0 MiB", "900 bytes".
std::string bytes_text(uint64_t bytes);
// --max-memory's syntax: a number with an optional binary unit (K, M, G, T, optionally followed by "iB" or
// "B": 8G, 512MiB, 1.5GiB), or a percentage of the available memory (50%). The whole text, or nothing.
std::optional<int64_t> parse_size(const std::string& text);

}  // namespace memory_budget
}  // namespace mpa
