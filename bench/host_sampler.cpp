// A wall-clock sampling profiler of the main thread, preloaded into any command:
//   MPA_HOST_PROFILE=OUT.samples LD_PRELOAD=build/libmpaudit_host_sampler.so build/mpaudit audit ...
// then `bench/host_profile.py OUT.samples` names where the time went. It is for machines with no perf
// (the GPU machines lent to this project have neither perf nor a working Nsight Systems): it samples the
// main thread's stack every MPA_HOST_PROFILE_US microseconds of wall time (default 500), so time the thread
// spends waiting (for the GPU, in a synchronisation) counts as well as time it computes. The samples and
// the process's memory map are written at exit.
#include <dlfcn.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace {

constexpr int kFrames = 48;
constexpr size_t kMaxSamples = 1 << 16;

struct Sample {
  int depth;
  void* frames[kFrames];
};

// libunwind's unw_backtrace (Debian libunwind8), looked up at run time: unlike glibc's backtrace() it does
// not allocate, so it may interrupt malloc.
using Backtrace = int (*)(void**, int);
Backtrace unwind = nullptr;
Sample* samples = nullptr;
std::atomic<size_t> taken{0};
timer_t timer;
const char* out_path = nullptr;
long interval_us = 500;

void on_tick(int) {
  const size_t i = taken.load(std::memory_order_relaxed);
  if (i >= kMaxSamples) return;
  const int saved_errno = errno;
  samples[i].depth = unwind(samples[i].frames, kFrames);
  taken.store(i + 1, std::memory_order_relaxed);
  errno = saved_errno;
}

__attribute__((constructor)) void start_sampling() {
  out_path = std::getenv("MPA_HOST_PROFILE");
  if (!out_path || !*out_path) return;
  if (const char* us_text = std::getenv("MPA_HOST_PROFILE_US")) interval_us = std::max(50L, std::atol(us_text));
  void* library = dlopen("libunwind.so.8", RTLD_NOW | RTLD_LOCAL);
  unwind = library ? reinterpret_cast<Backtrace>(dlsym(library, "unw_backtrace")) : nullptr;
  if (!unwind) return void(std::fprintf(stderr, "host sampler: no libunwind.so.8 (Debian libunwind8)\n"));
  samples = static_cast<Sample*>(std::calloc(kMaxSamples, sizeof(Sample)));
  void* warm[4];
  unwind(warm, 4);  // its first call sets up its caches: not inside the signal handler
  // The handler runs on a stack of its own: with the signal frame pushed on the thread's stack, even an
  // empty handler corrupted the heap inside oneDNN's sgemm (its generated code keeps data below the
  // stack pointer, it seems); on a stack of its own it does not.
  static char handler_stack[1 << 16];
  stack_t alternate{};
  alternate.ss_sp = handler_stack;
  alternate.ss_size = sizeof handler_stack;
  sigaltstack(&alternate, nullptr);
  struct sigaction action {};
  action.sa_handler = on_tick;
  action.sa_flags = SA_RESTART | SA_ONSTACK;
  sigaction(SIGPROF, &action, nullptr);
  sigevent event{};
  event.sigev_notify = SIGEV_THREAD_ID;
  event.sigev_signo = SIGPROF;
  event._sigev_un._tid = static_cast<pid_t>(syscall(SYS_gettid));  // the main thread only
  if (timer_create(CLOCK_MONOTONIC, &event, &timer) != 0) return std::perror("host sampler: timer_create");
  itimerspec every{};
  every.it_interval.tv_sec = every.it_value.tv_sec = interval_us / 1000000;
  every.it_interval.tv_nsec = every.it_value.tv_nsec = interval_us % 1000000 * 1000;
  timer_settime(timer, 0, &every, nullptr);
}

__attribute__((destructor)) void write_samples() {
  if (!samples) return;
  itimerspec off{};
  timer_settime(timer, 0, &off, nullptr);
  FILE* out = std::fopen(out_path, "w");
  if (!out) return std::perror(out_path);
  std::fprintf(out, "interval_us %ld\n", interval_us);
  if (FILE* maps = std::fopen("/proc/self/maps", "r")) {
    char line[4096];
    while (std::fgets(line, sizeof line, maps)) std::fprintf(out, "map %s", line);
    std::fclose(maps);
  }
  const size_t n = std::min(taken.load(), kMaxSamples);
  for (size_t i = 0; i < n; ++i) {
    std::fputs("sample", out);
    for (int f = 0; f < samples[i].depth; ++f) std::fprintf(out, " %lx", reinterpret_cast<uintptr_t>(samples[i].frames[f]));
    std::fputc('\n', out);
  }
  std::fclose(out);
}

}  // namespace
