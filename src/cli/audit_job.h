// The audit as a job, shared by `mpaudit audit` and `mpaudit view MODEL.onnx` so that both take the same
// options and give the same report: the options that decide what is audited (targets, inputs, thresholds,
// runtime emulation, nodes kept in FP32, threads) are registered and parsed once; AuditJob then loads the
// model and inputs and runs audits, each with a progress callback that can take a partial report and a
// flag that cancels it.
#pragma once
#include <CLI/CLI.hpp>
#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "audit/auditor.h"
#include "io/inputs.h"
#include "reports/report.h"

namespace mpa::cli {

struct AuditJobArgs {
  std::string model;
  std::vector<std::string> targets;  // empty: fp16
  std::string reference = "fp32", accumulation = "fp32", profile = "generic", fp8_scaling = "none", shard;
  std::vector<std::string> thresholds;  // KEY=VALUE
  std::vector<std::string> keep_fp32;   // top-level node names computed in FP32 in the target runs
  std::vector<std::string> keep_fp32_ops;  // and every top-level node of these op types
  std::string keep_fp32_preset;            // and of this recipe's (fix/presets.h)
  InputOptions inputs;
  bool timing = false;
  int threads = 0;
  std::string device = "cpu";
  std::string isolated = "all";  // audit/auditor.h IsolatedPass
};

// Every option of AuditJobArgs but the model, which each command names itself.
void add_audit_job_options(CLI::App& app, AuditJobArgs& args);

// Called at the start and after every node of every sample: node runs done and in all (nodes x samples),
// and the report so far (valid only during the call; nodes not yet run carry no statistics).
using AuditProgress = std::function<void(int64_t done, int64_t total, const std::function<report::Report()>& snapshot)>;

// Thrown out of AuditJob::run when its cancel flag is set.
struct AuditCancelled : std::exception {
  const char* what() const noexcept override { return "audit cancelled"; }
};

struct AuditRun {
  report::Report report;
  double total_ms = 0;  // the runs over all samples, without loading and the final evaluation
  Auditor::TimeSplit time_split;
  // With `keep_reference`: per sample, the reference's graph outputs and, while they fit a quarter of the
  // memory budget (else none), its record of every node output.
  std::vector<TensorMap> reference_outputs;
  std::vector<RunRecord> reference_records;
};

class AuditJob {
 public:
  // Loads the model and opens the inputs; fails (mpa::Error) on a bad model, option or input.
  explicit AuditJob(AuditJobArgs args);
  ~AuditJob();
  // One audit over the job's samples with these nodes kept in FP32 (the job's own --keep-fp32 for
  // `audit`; the what-if set for `view`). Cancelling is checked after every node. `only_format`, when
  // given, audits that one of the job's targets.
  // `keep_reference`: the run also hands over the reference's values (AuditRun), so that a command running
  // the model again (fix) need not run the reference a second time.
  AuditRun run(const std::vector<std::string>& keep_fp32, const AuditProgress& progress = {},
               const std::atomic<bool>* cancel = nullptr, const std::string& only_format = "",
               bool keep_reference = false) const;
  const AuditJobArgs& args() const { return args_; }
  // What the job audits, for commands that also run the model themselves (fix's mixed-precision runs).
  const Model& model() const;
  const std::string& model_sha256() const;
  const AuditOptions& options() const;
  // The nodes the options keep in FP32: --keep-fp32, then those of --keep-fp32-ops and --keep-fp32-preset.
  std::vector<std::string> keep_fp32() const;
  const SampleSource& samples() const;
  std::pair<int64_t, int64_t> sample_range() const;  // [first, last): the shard's samples
  // Fails (mpa::Error) when a --fail-on expression is malformed or names a target or output that the
  // report will not have: checked before a long audit rather than after it.
  void check_gates(const std::vector<std::string>& fail_on) const;

 private:
  void load();
  AuditRun run_in_file(const std::vector<std::string>& keep_fp32, const AuditProgress& progress,
                       const std::atomic<bool>* cancel, const std::string& only_format, bool keep_reference) const;
  struct Loaded;
  AuditJobArgs args_;
  std::unique_ptr<Loaded> loaded_;
};

}  // namespace mpa::cli
