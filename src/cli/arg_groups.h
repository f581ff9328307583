// Argument groups shared by subcommands, so every command parses the same options the same way.
#pragma once
#include <CLI/CLI.hpp>

#include "io/inputs.h"

namespace mpa::cli {

// Bounds of the counting options (README, Limits): samples per audit or shard, worker threads.
inline constexpr int64_t kMaxSamples = int64_t{1} << 31;
inline constexpr int64_t kMaxThreads = 1024;

// --input, --inputs, --random-inputs, --seed, --shape, --dist (and --samples when with_samples).
void add_input_options(CLI::App& app, InputOptions& options, bool with_samples);
// --threads (default: every core).
void add_thread_option(CLI::App& app, int& threads);
// --device NAME: the backend that runs the model (`mpaudit devices` lists them).
void add_device_option(CLI::App& app, std::string& device);
// --keep-fp32 NODE,..., --keep-fp32-ops OP,... and --keep-fp32-preset NAME (fix/presets.h); `where` says
// which runs they apply to.
void add_keep_fp32_options(CLI::App& app, std::vector<std::string>& nodes, std::vector<std::string>& ops,
                           std::string& preset, const std::string& where);
int resolve_threads(int requested);
// --max-memory SIZE: the memory budget (common/memory_budget.h), for every command.
void add_memory_option(CLI::App& app);
// For options naming a file to write: an empty path is refused at parse time, naming the option.
extern const CLI::Validator kNonEmptyPath;
// For integer options: the text must be a whole number in [lo, hi], read exactly (no scientific notation,
// no fraction, no silent clamping of an out-of-range value to the type's limit).
CLI::Validator integer_in(int64_t lo, int64_t hi);

}  // namespace mpa::cli
