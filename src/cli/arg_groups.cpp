#include "cli/arg_groups.h"

#include <charconv>
#include <limits>
#include <thread>

#include "common/memory_budget.h"
#include "fix/presets.h"

namespace mpa::cli {

void add_input_options(CLI::App& app, InputOptions& o, bool with_samples) {
  app.add_option("--input", o.files,
                 "NAME=FILE (.npy, .pb, an image .jpg/.jpeg/.png/.bmp, audio .wav) or NAME=NUMBER for a scalar input "
                 "(repeatable)")
      ->group("Inputs");
  app.add_option("--preprocess", o.preprocess,
                 "NAME:KEY=VALUE,... for an image or .wav input (repeatable): resize=HxW, layout=nchw|nhwc, "
                 "rgb|bgr|gray, scale=S (e.g. 1/255), mean=M[/M/M], std=S[/S/S]; audio: rate=HZ (resample first), "
                 "offset=N, length=N, mono, scale=S (e.g. 32768)")
      ->group("Inputs");
  app.add_option("--inputs", o.inputs, "FILE.npz (one array per input) or a folder with one sample per subfolder")
      ->group("Inputs");
  app.add_flag("--random-inputs", o.random, "fill inputs not given otherwise with seeded random values")->group("Inputs");
  if (with_samples)
    app.add_option("--samples", o.samples, "number of random samples (implies --random-inputs)")
        ->check(integer_in(1, kMaxSamples))
        ->group("Inputs");
  app.add_option("--seed", o.seed, "seed for random inputs")
      ->default_val(0)
      ->check(integer_in(0, std::numeric_limits<int64_t>::max()))
      ->group("Inputs");
  app.add_option("--shape", o.shapes, "NAME=1x3x224x224: fixes symbolic dims of random inputs")->group("Inputs");
  app.add_option("--dist", o.distributions, "NAME=normal:MEAN,STD | uniform:LO,HI | int:LO,HI for random inputs")
      ->group("Inputs");
}

void add_thread_option(CLI::App& app, int& threads) {
  app.add_option("--threads", threads, "worker threads (default: all cores)")->check(integer_in(0, kMaxThreads));
}

const CLI::Validator kNonEmptyPath(
    [](std::string& path) { return path.empty() ? std::string("empty path") : std::string(); }, "PATH");

CLI::Validator integer_in(int64_t lo, int64_t hi) {
  return CLI::Validator(
      [lo, hi](std::string& text) -> std::string {
        int64_t value = 0;
        const char* end = text.data() + text.size();
        const auto [stop, error] = std::from_chars(text.data(), end, value);
        if (error == std::errc::result_out_of_range ||
            (error == std::errc() && stop == end && (value < lo || value > hi)))
          return text + " is out of range [" + std::to_string(lo) + ", " + std::to_string(hi) + "]";
        if (error != std::errc() || stop != end) return text + " is not a whole number";
        return {};
      },
      "INT in [" + std::to_string(lo) + ", " + std::to_string(hi) + "]");
}

int resolve_threads(int requested) {
  return requested > 0 ? requested : static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
}

void add_memory_option(CLI::App& app) {
  app.add_option_function<std::string>(
         "--max-memory", [](const std::string& text) { memory_budget::set_limit(*memory_budget::parse_size(text)); },
         "the most memory tensors may take: 8G, 512MiB, 1.5GiB, or 50% of what is available (default: 80% of the "
         "memory available at start, " +
             memory_budget::bytes_text(static_cast<uint64_t>(memory_budget::default_limit())) + " now)")
      ->check(CLI::Validator(
          [](std::string& text) -> std::string {
            return memory_budget::parse_size(text) ? std::string()
                                                   : text + " is not a size (e.g. 8G, 512MiB, 1.5GiB, 50%)";
          },
          "SIZE"));
}

void add_keep_fp32_options(CLI::App& app, std::vector<std::string>& nodes, std::vector<std::string>& ops,
                           std::string& preset, const std::string& where) {
  app.add_option("--keep-fp32", nodes,
                 "top-level node computed in FP32 " + where +
                     ", as a mixed-precision deployment would (repeatable; a comma-separated list works too)")
      ->delimiter(',');
  app.add_option("--keep-fp32-ops", ops,
                 "every top-level node of these op types in FP32 " + where + ", e.g. Softmax,Pow")
      ->delimiter(',');
  std::string names;
  for (const fix::KeepPreset& p : fix::keep_presets()) names += (names.empty() ? "" : ", ") + p.name;
  app.add_option("--keep-fp32-preset", preset, "a recipe's op types in FP32 " + where + ": " + names);
}

void add_device_option(CLI::App& app, std::string& device) {
  app.add_option("--device", device, "backend that runs the model: cpu (default), cuda or cuda:N (`mpaudit devices` lists them)");
}

}  // namespace mpa::cli
