#include "cli/audit_job.h"

#include "common/memory_budget.h"
#include "fix/mixed_runs.h"

#include <openssl/evp.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <future>
#include <memory>
#include <vector>

#include "audit/gate.h"
#include "backends/backend.h"
#include "cli/arg_groups.h"
#include "common/number_text.h"
#include "fix/presets.h"
#include "model/loader.h"

namespace mpa::cli {

namespace {

// SHA-256 of a file, read in 1 MiB pieces: a whole-file copy in memory would cost as much as the model.
// Returns early (an empty string) once `stop` is set.
std::string sha256_file_hex(const std::filesystem::path& path, const std::atomic<bool>& stop) {
  std::unique_ptr<EVP_MD_CTX, decltype(&EVP_MD_CTX_free)> ctx(EVP_MD_CTX_new(), EVP_MD_CTX_free);
  if (!(ctx && EVP_DigestInit_ex(ctx.get(), EVP_sha256(), nullptr))) fail("SHA-256 is not available");
  std::ifstream in(path, std::ios::binary);
  if (!in) fail(path.string() + ": cannot open for reading");
  std::vector<char> piece(size_t{1} << 20);
  while (in) {
    if (stop) return {};
    in.read(piece.data(), static_cast<std::streamsize>(piece.size()));
    EVP_DigestUpdate(ctx.get(), piece.data(), static_cast<size_t>(in.gcount()));
  }
  if (!in.eof()) fail(path.string() + ": read error");
  unsigned char digest[EVP_MAX_MD_SIZE];
  unsigned int length = 0;
  EVP_DigestFinal_ex(ctx.get(), digest, &length);
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
  const std::optional<double> parsed = parse_finite_number(spec.substr(eq + 1));
  if (!(parsed.has_value())) fail("--threshold '" + spec + "': expected a finite number after '='");
  const double value = *parsed;
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
  const size_t slash = shard.find('/');
  const std::optional<int64_t> k = parse_count(shard.substr(0, slash)),
                               n = slash == std::string::npos ? std::nullopt : parse_count(shard.substr(slash + 1));
  if (!(k && n && *n >= 1 && *k >= 1 && *k <= *n && *n <= 1000000))
    fail("--shard '" + shard + "': expected K/N with 1 <= K <= N <= 1000000");
  return {total * (*k - 1) / *n, total * *k / *n};
}

AuditOptions audit_options(const AuditJobArgs& args) {
  AuditOptions options;
  options.targets.clear();
  for (const auto& t : args.targets.empty() ? std::vector<std::string>{"fp16"} : args.targets) {
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
  options.isolated = parse_isolated_pass(args.isolated);
  options.threads = resolve_threads(args.threads);
  backend_named(args.device);  // an unknown or unavailable device fails before the model is read
  options.device = args.device;
  return options;
}

InputOptions sample_options(InputOptions inputs) {
  if (inputs.files.empty() && inputs.inputs.empty()) inputs.random = true;
  if (inputs.samples > 1) inputs.random = true;
  return inputs;
}

}  // namespace

void add_audit_job_options(CLI::App& app, AuditJobArgs& a) {
  app.add_option("--target", a.targets, "format to audit: fp16 (default), bf16, fp8e4m3, fp8e5m2, tf32 (repeatable)");
  app.add_option("--reference", a.reference, "reference precision: fp32 (default) or fp64");
  app.add_option("--accumulate", a.accumulation, "GEMM/Conv accumulation in the target run: fp32 (default) or fp16");
  app.add_option("--profile", a.profile, "GPU runtime to emulate: generic (default) or ort-cuda");
  app.add_option("--fp8-scaling", a.fp8_scaling,
                 "FP8 targets: none (default) or absmax (per-tensor scales from "
                 "the reference absmax, as FP8 inference recipes calibrate)");
  add_keep_fp32_options(app, a.keep_fp32, a.keep_fp32_ops, a.keep_fp32_preset, "in the target runs");
  app.add_option("--isolated", a.isolated,
                 "which nodes also run alone in the target format: all (isolated figures for every node; the "
                 "default of audit and view), suspects (only where they can change a verdict; faster; the default "
                 "of fix), off");
  add_input_options(app, a.inputs, true);
  app.add_option("--shard", a.shard, "K/N: audit only the K-th of N slices of the samples (join with `mpaudit merge`)");
  app.add_option("--threshold", a.thresholds, "KEY=VALUE verdict threshold, e.g. sqnr_warn_db.fp16=35 (repeatable)");
  app.add_flag(
      "--timing", a.timing,
      "record per-node wall time in the report (which then differs between runs); `audit` also prints where its "
      "time went");
  add_thread_option(app, a.threads);
  add_device_option(app, a.device);
}

// What stays the same across runs: the model, its identity, the options and the samples.
struct AuditJob::Loaded {
  Model model;
  std::string sha256;
  AuditOptions options;
  std::unique_ptr<SampleSource> samples;  // reads model.graph, so built after it, in place
  int64_t first = 0, last = 0;            // the shard's samples
};

AuditJob::AuditJob(AuditJobArgs args) : args_(std::move(args)), loaded_(std::make_unique<Loaded>()) {
  // Options first: a typo fails before a large model is read.
  loaded_->options = audit_options(args_);
  naming_file(args_.model, [&] { load(); });
}

const Model& AuditJob::model() const { return loaded_->model; }
const std::string& AuditJob::model_sha256() const { return loaded_->sha256; }
const AuditOptions& AuditJob::options() const { return loaded_->options; }
std::vector<std::string> AuditJob::keep_fp32() const {
  return fix::resolve_keep_set(*loaded_->model.graph, args_.keep_fp32, args_.keep_fp32_ops, args_.keep_fp32_preset);
}
const SampleSource& AuditJob::samples() const { return *loaded_->samples; }
std::pair<int64_t, int64_t> AuditJob::sample_range() const { return {loaded_->first, loaded_->last}; }

void AuditJob::check_gates(const std::vector<std::string>& fail_on) const {
  std::vector<std::string> targets, outputs;
  for (Format f : loaded_->options.targets) targets.emplace_back(format_name(f));
  // The summary lists the floating outputs (an undeclared type may turn out floating).
  for (const ValueInfo& out : loaded_->model.graph->outputs)
    if (out.elem_type == 0 || dtype_is_float(static_cast<DType>(out.elem_type))) outputs.push_back(out.name);
  mpa::check_gates(fail_on, targets, outputs);
}

void AuditJob::load() {
  // The file is parsed as it is read and hashed meanwhile on another thread (a second read, from the page
  // cache); a file the loader refuses (no size, over the limit) fails here, before either starts.
  const std::filesystem::path path(args_.model);
  checked_file_size(path, LoadLimits{}.max_file_bytes);
  std::atomic<bool> stop_hashing{false};
  std::future<std::string> sha256 = std::async(std::launch::async, sha256_file_hex, path, std::cref(stop_hashing));
  try {
    loaded_->model = load_model(path);
  } catch (...) {
    stop_hashing = true;
    throw;
  }
  loaded_->sha256 = sha256.get();
  loaded_->samples = std::make_unique<SampleSource>(*loaded_->model.graph, sample_options(args_.inputs));
  std::tie(loaded_->first, loaded_->last) = shard_range(args_.shard, loaded_->samples->count());
}

AuditJob::~AuditJob() = default;

AuditRun AuditJob::run(const std::vector<std::string>& keep_fp32, const AuditProgress& progress,
                       const std::atomic<bool>* cancel, const std::string& only_format, bool keep_reference) const {
  return naming_file(args_.model,
                     [&] { return run_in_file(keep_fp32, progress, cancel, only_format, keep_reference); });
}

AuditRun AuditJob::run_in_file(const std::vector<std::string>& keep_fp32, const AuditProgress& progress,
                               const std::atomic<bool>* cancel, const std::string& only_format,
                               bool keep_reference) const {
  const Loaded& l = *loaded_;
  AuditOptions options = l.options;
  // A recipe's nodes stay kept whatever set the caller asks for (the dashboard's what-if, fix's trials).
  options.keep_fp32 = fix::resolve_keep_set(*l.model.graph, keep_fp32, args_.keep_fp32_ops, args_.keep_fp32_preset);
  if (!only_format.empty()) options.targets = {*parse_format(only_format)};
  Auditor auditor(l.model.graph, options);

  // The report's identity and config, then the auditor's statistics so far.
  const auto make_report = [&] {
    report::Report rep;
    rep.tool_version = MPA_VERSION;
    rep.model_path = args_.model;
    rep.model_sha256 = l.sha256;
    rep.opset = l.model.graph->opset("");
    report::Config& c = rep.config;
    c.reference = args_.reference;
    for (Format f : options.targets) c.targets.emplace_back(format_name(f));
    c.samples = l.last - l.first;
    c.total_samples = l.samples->count();
    c.seed = args_.inputs.seed;
    // A shard that holds every sample (1/1) is the whole set, and says so as an unsharded audit does.
    c.shard = c.samples == c.total_samples ? "" : args_.shard;
    if (l.first < l.last) c.sample_ranges = {{l.first, l.last}};
    c.accumulation = args_.accumulation;
    c.profile = args_.profile;
    c.fp8_scaling = args_.fp8_scaling;
    c.inputs = l.samples->describe();
    c.timing = args_.timing;
    c.thresholds = options.thresholds;
    auditor.fill(rep);
    return rep;
  };
  const std::function<report::Report()> snapshot = make_report;
  const int64_t total = static_cast<int64_t>(auditor.node_count()) * (l.last - l.first);
  int64_t done = 0;
  if (progress) progress(done, total, snapshot);
  const auto on_node = [&](size_t) {
    if (cancel && cancel->load(std::memory_order_relaxed)) throw AuditCancelled();
    ++done;
    if (progress) progress(done, total, snapshot);
  };

  AuditRun result;
  const auto start = std::chrono::steady_clock::now();
  bool recording = keep_reference;
  size_t recorded_bytes = 0;
  for (int64_t s = l.first; s < l.last; ++s) {
    RunRecord record;
    TensorMap outputs = auditor.observe(l.samples->sample(s), s, on_node, recording ? &record : nullptr);
    if (!keep_reference) continue;
    result.reference_outputs.push_back(std::move(outputs));
    if (!recording) continue;
    recorded_bytes += record.nbytes();
    // Records of every sample's every value: past their share of the budget, the runs that would reuse them
    // make their own (fix/mixed_runs.h keeps runs within the same share).
    recording = recorded_bytes <= static_cast<size_t>(memory_budget::limit() / fix::kRecordShareOfBudget);
    if (recording)
      result.reference_records.push_back(std::move(record));
    else
      result.reference_records.clear();
  }
  result.total_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  result.time_split = auditor.time_split();
  result.report = make_report();
  return result;
}

}  // namespace mpa::cli
