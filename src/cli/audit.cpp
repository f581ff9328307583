#include <openssl/evp.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <filesystem>

#include "audit/auditor.h"
#include "audit/gate.h"
#include "cli/arg_groups.h"
#include "cli/commands.h"
#include "cli/summary.h"
#include "model/loader.h"

namespace mpa::cli {

namespace {

struct AuditArgs {
  std::string model;
  std::vector<std::string> targets;
  std::string reference = "fp32", accumulation = "fp32", profile = "generic", fp8_scaling = "none", shard, json_path;
  std::vector<std::string> fail_on, thresholds;
  InputOptions inputs;
  bool timing = false, quiet = false;
  int threads = 0;
};

std::string sha256_hex(const std::string& bytes) {
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_Digest(bytes.data(), bytes.size(), digest, &length, EVP_sha256(), nullptr);
  std::string hex;
  char buf[3];
  for (unsigned int i = 0; i < length; ++i) {
    std::snprintf(buf, sizeof buf, "%02x", digest[i]);
    hex += buf;
  }
  return hex;
}

Format parse_target(const std::string& name) {
  const auto f = parse_format(name);
  if (!(f.has_value() && *f != Format::FP32 && *f != Format::FP64))
    fail("--target '" + name + "': expected fp16, bf16, fp8e4m3, fp8e5m2 or tf32");
  return *f;
}

// KEY=VALUE over the thresholds: underflow_warn_frac, ..., sqnr_warn_db.fp16, atol, rtol, rel_floor, jump_db.
void apply_threshold(report::Thresholds& t, const std::string& spec) {
  const size_t eq = spec.find('=');
  if (!(eq != std::string::npos)) fail("--threshold '" + spec + "': expected KEY=VALUE");
  const std::string key = spec.substr(0, eq);
  double value = 0;
  try {
    value = std::stod(spec.substr(eq + 1));
  } catch (const std::exception&) {
    fail("--threshold '" + spec + "': bad number");
  }
  std::map<std::string, double*> scalars = {{"underflow_warn_frac", &t.underflow_warn_frac},
                                            {"underflow_unsafe_frac", &t.underflow_unsafe_frac},
                                            {"weight_underflow_warn_frac", &t.weight_underflow_warn_frac},
                                            {"weight_underflow_unsafe_frac", &t.weight_underflow_unsafe_frac},
                                            {"jump_db", &t.jump_db},
                                            {"own_loss_db", &t.own_loss_db},
                                            {"atol", &t.tolerances.atol},
                                            {"rtol", &t.tolerances.rtol},
                                            {"rel_floor", &t.tolerances.rel_floor}};
  if (scalars.count(key)) {
    *scalars[key] = value;
    return;
  }
  for (const char* prefix : {"sqnr_warn_db.", "sqnr_unsafe_db."}) {
    const std::string p = prefix;
    if (key.rfind(p, 0) == 0) {
      const std::string fmt = key.substr(p.size());
      if (!(parse_format(fmt).has_value())) fail("--threshold '" + spec + "': unknown format '" + fmt + "'");
      (p == "sqnr_warn_db." ? t.sqnr_warn_db : t.sqnr_unsafe_db)[std::string(format_name(*parse_format(fmt)))] = value;
      return;
    }
  }
  fail("--threshold '" + spec + "': unknown key '" + key + "'");
}

// The K-th of N contiguous slices of [0, total): [floor((K-1)T/N), floor(KT/N)).
std::pair<int64_t, int64_t> shard_range(const std::string& shard, int64_t total) {
  if (shard.empty()) return {0, total};
  int k = 0, n = 0;
  char tail = 0;
  if (!(std::sscanf(shard.c_str(), "%d/%d%c", &k, &n, &tail) == 2 && n >= 1 && k >= 1 && k <= n))
    fail("--shard '" + shard + "': expected K/N with 1 <= K <= N");
  return {total * (k - 1) / n, total * k / n};
}

class Progress {
 public:
  Progress(int64_t total, bool enabled) : total_(total), enabled_(enabled && ::isatty(2)), start_(clock::now()) {}
  void step() {
    ++done_;
    if (!enabled_ || (done_ % 16 != 0 && done_ != total_)) return;
    const double elapsed = std::chrono::duration<double>(clock::now() - start_).count();
    const double eta = done_ ? elapsed * static_cast<double>(total_ - done_) / static_cast<double>(done_) : 0;
    const int width = 30, filled = static_cast<int>(width * done_ / std::max<int64_t>(total_, 1));
    std::fprintf(stderr, "\r[%.*s%*s] %3d%%  %.1fs elapsed, ETA %.1fs ", filled, "##############################",
                 width - filled, "", static_cast<int>(100 * done_ / std::max<int64_t>(total_, 1)), elapsed, eta);
    if (done_ == total_) std::fprintf(stderr, "\n");
  }

 private:
  using clock = std::chrono::steady_clock;
  int64_t total_, done_ = 0;
  bool enabled_;
  clock::time_point start_;
};

int audit(AuditArgs args) {
  const std::string bytes = read_file_bytes(args.model, uint64_t{4} << 30);
  const Model model = load_model_from_bytes(bytes, std::filesystem::path(args.model).parent_path(), args.model);
  if (args.targets.empty()) args.targets = {"fp16"};
  AuditOptions options;
  options.targets.clear();
  for (const auto& t : args.targets) {
    // "--target fp16 --target float16" names one format twice: the report keys its per-format figures by
    // name, so config.targets must list each format once.
    const Format format = parse_target(t);
    if (std::find(options.targets.begin(), options.targets.end(), format) == options.targets.end())
      options.targets.push_back(format);
  }
  require(args.reference == "fp32" || args.reference == "fp64", "--reference must be fp32 or fp64");
  options.reference = args.reference == "fp64" ? Format::FP64 : Format::FP32;
  require(args.accumulation == "fp32" || args.accumulation == "fp16", "--accumulate must be fp32 or fp16");
  options.accumulation = args.accumulation == "fp16" ? Accumulation::FP16 : Accumulation::FP32;
  require(args.profile == "generic" || args.profile == "ort-cuda", "--profile must be generic or ort-cuda");
  options.profile = args.profile == "ort-cuda" ? RuntimeProfile::OrtCuda : RuntimeProfile::Generic;
  require(args.fp8_scaling == "none" || args.fp8_scaling == "absmax", "--fp8-scaling must be none or absmax");
  options.fp8_absmax_scaling = args.fp8_scaling == "absmax";
  for (const auto& spec : args.thresholds) apply_threshold(options.thresholds, spec);
  options.timing = args.timing;
  options.threads = resolve_threads(args.threads);

  if (args.inputs.files.empty() && args.inputs.inputs.empty()) args.inputs.random = true;
  if (args.inputs.samples > 1) args.inputs.random = true;
  const SampleSource samples(*model.graph, args.inputs);
  const auto [first, last] = shard_range(args.shard, samples.count());

  Auditor auditor(model.graph, options);
  Progress progress(static_cast<int64_t>(auditor.node_count()) * (last - first), !args.quiet);
  const auto start = std::chrono::steady_clock::now();
  for (int64_t s = first; s < last; ++s) auditor.observe(samples.sample(s), s, [&](size_t) { progress.step(); });
  if (args.timing) {
    const double total = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
    const Auditor::TimeSplit split = auditor.time_split();
    std::printf("audit-timing: total_ms=%.3f execute_ms=%.3f convert_ms=%.3f probes_ms=%.3f\n", total,
                1e3 * split.execute, 1e3 * split.convert, 1e3 * split.probes);
  }

  report::Report rep;
  rep.tool_version = MPA_VERSION;
  rep.model_path = args.model;
  rep.model_sha256 = sha256_hex(bytes);
  rep.opset = model.graph->opset("");
  report::Config& c = rep.config;
  c.reference = args.reference;
  for (Format f : options.targets) c.targets.emplace_back(format_name(f));
  c.samples = last - first;
  c.total_samples = samples.count();
  c.seed = args.inputs.seed;
  c.shard = args.shard;
  c.accumulation = args.accumulation;
  c.profile = args.profile;
  c.fp8_scaling = args.fp8_scaling;
  c.inputs = samples.describe();
  c.timing = args.timing;
  c.thresholds = options.thresholds;
  auditor.fill(rep);
  if (!args.json_path.empty()) report::write_report(args.json_path, rep);
  return finish_with_summary(rep, args.fail_on, args.quiet);
}

}  // namespace

Action add_audit(CLI::App& app) {
  auto a = std::make_shared<AuditArgs>();
  app.add_option("model", a->model, "ONNX model file")->required();
  app.add_option("--target", a->targets, "format to audit: fp16 (default), bf16, fp8e4m3, fp8e5m2, tf32 (repeatable)");
  app.add_option("--reference", a->reference, "reference precision: fp32 (default) or fp64");
  app.add_option("--accumulate", a->accumulation, "GEMM/Conv accumulation in the target run: fp32 (default) or fp16");
  app.add_option("--profile", a->profile, "GPU runtime to emulate: generic (default) or ort-cuda");
  app.add_option("--fp8-scaling", a->fp8_scaling, "FP8 targets: none (default) or absmax (per-tensor scales from "
                                                   "the reference absmax, as FP8 inference recipes calibrate)");
  add_input_options(app, a->inputs, true);
  app.add_option("--shard", a->shard, "K/N: audit only the K-th of N slices of the samples (join with `mpaudit merge`)");
  app.add_option("--json", a->json_path, "write the JSON report here (atomically)");
  app.add_option("--fail-on", a->fail_on, "gate, e.g. 'unsafe_nodes>0' or 'output.max_rel_err>1e-2' (repeatable; "
                                          "default: fail when any node is unsafe)");
  app.add_option("--threshold", a->thresholds, "KEY=VALUE verdict threshold, e.g. sqnr_warn_db.fp16=35 (repeatable)");
  app.add_flag("--timing", a->timing, "record per-node wall time (makes the report differ between runs) and print where the audit's time went");
  app.add_flag("--quiet", a->quiet, "no progress bar and no summary; the exit code still tells");
  add_thread_option(app, a->threads);
  return [a] { return audit(*a); };
}

}  // namespace mpa::cli
