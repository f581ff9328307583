// The JSON report of `mpaudit fix` (schema reports/schema/mpaudit.fix.1.json): the verified keep-set, why
// each kept node is needed, the gates before and after, every mixed-precision run the search made, and its
// cost. Deterministic for the same model, inputs and options: no clock, no machine facts. NaN is null.
#pragma once
#include <cmath>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "fix/export_onnx.h"

namespace mpa::report {

inline constexpr const char* kFixSchema = "mpaudit.fix/1";

struct FixGateValue {
  std::string gate, output;
  double value = 0;
  bool held = true;
};

struct KeptNode {
  std::string node, op_type;
  std::vector<std::string> outputs;          // its output tensors: unnamed nodes are known by them
  std::string audit_verdict;                 // the audit's verdict on the node in the target: safe, warn, unsafe
  std::vector<std::string> audit_reasons;    // the audit's reason codes (overflow, underflow, ...)
  std::vector<FixGateValue> needed_because;  // the gates that fail with the node in the target format
  // The samples that run was judged on: fewer than the report's when a gate had failed on them whatever the
  // others give (needed_because then holds the bound). 0 in reports written before it was recorded.
  int64_t needed_samples = 0;
};

struct FixTrial {
  std::string purpose;
  int64_t kept = 0;
  bool pass = false;
  double run_equivalents = 0;  // what the run executed, in full-run equivalents
  int64_t samples = 0;         // the samples it ran (see KeptNode::needed_samples); 0 in older reports
};

// A recipe (fix/presets.h) judged by the same gates on the same samples.
struct PresetComparison {
  std::string name;
  int64_t kept = 0;  // nodes of the model it keeps in FP32
  bool pass = false;
  std::vector<FixGateValue> gates;
};

// A node's float outputs against the reference in one run, the worst over them: the smallest SQNR, the
// largest errors, the NaN/Inf summed. NaN where nothing was measured (no finite reference element).
struct FixNodeRun {
  double sqnr_db = NAN, max_rel_err = NAN, max_abs_err = NAN;
  int64_t nonfinite = 0;
};

// Every top-level node with a float output: how far it is from the reference with the whole model in the
// target format (before) and with the keep-set (after; absent when no keep-set meets the gates).
struct FixNode {
  std::string node, op_type;
  bool kept = false;
  FixNodeRun before;
  std::optional<FixNodeRun> after;
};

// What --export-onnx wrote.
struct FixExport {
  std::string path;
  std::string format;  // fp16 or bf16
  bool keep_io_types = true;
  fix::ExportResult result;
};

struct FixReport {
  std::string tool_version, model_path, model_sha256;
  std::string target, reference, inputs;
  int64_t samples = 0;
  std::vector<std::string> gates;
  std::vector<std::string> forced_fp32;  // --keep-fp32: kept in every run whatever the search finds
  bool met = false, minimal = false;
  std::string note;
  std::vector<KeptNode> keep;
  std::vector<FixGateValue> before, after;  // all in the target format; with the keep-set
  std::vector<FixTrial> trials;
  std::vector<PresetComparison> presets;
  std::vector<FixNode> nodes;  // absent from reports written before they were added
  // Cost in full-run equivalents (one run of the model over every sample): the audit that seeds the search
  // (reference, target and isolated passes), the reference outputs, and what the mixed-precision runs
  // executed (`mixed_runs` of them, each rerunning only what its keep-set changes).
  double audit_run_equivalents = 0;
  int64_t reference_runs = 0, mixed_runs = 0;
  double mixed_run_equivalents = 0;
  // Runs for the presets the search had not already judged, and the reference if only they needed it (not in
  // the search's cost).
  int64_t comparison_runs = 0;
  // Runs for the per-node figures (the reference, all in the target format, the keep-set), not in the search's
  // cost either.
  int64_t node_figure_runs = 0;
  std::optional<FixExport> exported;  // null in the JSON without --export-onnx

  double total_run_equivalents() const {
    return audit_run_equivalents + static_cast<double>(reference_runs) + mixed_run_equivalents;
  }
};

nlohmann::ordered_json to_json(const FixReport& report);
std::string serialize(const FixReport& report);  // deterministic text, 1-space indent
// The report as written; fails (mpa::Error) naming the field where it does not follow the schema.
FixReport fix_report_from_json(const nlohmann::json& j);
// Reads and checks a fix report file; errors name the file.
FixReport read_fix_report(const std::string& path);

}  // namespace mpa::report
