#include <cupti.h>
#include <dlfcn.h>

#include <cstdlib>
#include <mutex>
#include <type_traits>

#include "backends/cuda/cupti_timer.h"
#include "backends/cuda/kernel_times.h"

namespace mpa::cuda {

namespace {

// The CUPTI entry points, looked up in libcupti at run time.
struct Cupti {
  decltype(&cuptiActivityRegisterCallbacks) register_callbacks = nullptr;
  decltype(&cuptiActivityEnable) enable = nullptr;
  decltype(&cuptiActivityPushExternalCorrelationId) push = nullptr;
  decltype(&cuptiActivityPopExternalCorrelationId) pop = nullptr;
  decltype(&cuptiActivityFlushAll) flush_all = nullptr;
  decltype(&cuptiActivityGetNextRecord) next_record = nullptr;
  decltype(&cuptiGetResultString) result_string = nullptr;
};

constexpr size_t kBufferBytes = 4 << 20;  // kineto's size; records are 8-byte aligned

std::mutex mutex;
KernelTimes times;
Cupti api;
uint64_t next_id = 0;

void CUPTIAPI buffer_requested(uint8_t** buffer, size_t* size, size_t* max_records) {
  *buffer = static_cast<uint8_t*>(std::aligned_alloc(8, kBufferBytes));
  *size = *buffer ? kBufferBytes : 0;
  *max_records = 0;
}

void CUPTIAPI buffer_completed(CUcontext, uint32_t, uint8_t* buffer, size_t, size_t valid) {
  {
    std::lock_guard<std::mutex> lock(mutex);
    CUpti_Activity* record = nullptr;
    while (api.next_record(buffer, valid, &record) == CUPTI_SUCCESS) {
      if (record->kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        const auto* kernel = reinterpret_cast<const CUpti_ActivityKernel10*>(record);
        times.kernel(kernel->correlationId, kernel->start, kernel->end);
      } else if (record->kind == CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION) {
        const auto* link = reinterpret_cast<const CUpti_ActivityExternalCorrelation*>(record);
        if (link->externalKind == CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0)
          times.correlate(link->correlationId, link->externalId);
      }
    }
  }
  std::free(buffer);
}

std::string& reason() {
  static std::string why;
  return why;
}

std::string describe(CUptiResult result) {
  const char* text = nullptr;
  if (api.result_string) api.result_string(result, &text);
  return text ? text : "CUPTI error " + std::to_string(static_cast<int>(result));
}

// Loads libcupti and starts collecting; the reason in words when it cannot.
bool load() {
  void* library = dlopen("libcupti.so.13", RTLD_NOW | RTLD_LOCAL);
  if (!library) library = dlopen("libcupti.so", RTLD_NOW | RTLD_LOCAL);
  if (!library) {
    const char* error = dlerror();
    reason() = std::string("CUPTI not loaded (") + (error ? error : "libcupti.so.13 not found") + ")";
    return false;
  }
  const auto find = [&](auto& fn, const char* name) {
    fn = reinterpret_cast<std::remove_reference_t<decltype(fn)>>(dlsym(library, name));
  };
  find(api.register_callbacks, "cuptiActivityRegisterCallbacks");
  find(api.enable, "cuptiActivityEnable");
  find(api.push, "cuptiActivityPushExternalCorrelationId");
  find(api.pop, "cuptiActivityPopExternalCorrelationId");
  find(api.flush_all, "cuptiActivityFlushAll");
  find(api.next_record, "cuptiActivityGetNextRecord");
  find(api.result_string, "cuptiGetResultString");
  if (!api.register_callbacks || !api.enable || !api.push || !api.pop || !api.flush_all || !api.next_record) {
    reason() = "CUPTI library lacks the activity API";
    return false;
  }
  // External correlation records precede API records only (cupti_activity.h, cuptiActivityPushExternalCorrelationId):
  // the runtime and driver API kinds must be on for a kernel's launch to be tied to its node.
  CUptiResult status = api.register_callbacks(buffer_requested, buffer_completed);
  for (const CUpti_ActivityKind kind : {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION,
                                        CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_ACTIVITY_KIND_DRIVER})
    if (status == CUPTI_SUCCESS) status = api.enable(kind);
  if (status != CUPTI_SUCCESS) {
    reason() = "CUPTI activity collection refused: " + describe(status);
    return false;
  }
  return true;
}

}  // namespace

CuptiTimer* CuptiTimer::start() {
  static CuptiTimer* timer = load() ? new CuptiTimer : nullptr;  // kept for the process, as CUPTI's state is
  return timer;
}

const std::string& CuptiTimer::why_not() { return reason(); }

uint64_t CuptiTimer::begin() {
  const uint64_t id = ++next_id;
  api.push(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, id);
  return id;
}

void CuptiTimer::end() {
  uint64_t popped = 0;
  api.pop(CUPTI_EXTERNAL_CORRELATION_KIND_CUSTOM0, &popped);
}

double CuptiTimer::seconds(uint64_t id) {
  api.flush_all(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);  // delivers the finished kernels' records now
  std::lock_guard<std::mutex> lock(mutex);
  return times.take_seconds(id);
}

}  // namespace mpa::cuda
