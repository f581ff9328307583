// The report model: what an audit measured, per node and output tensor, per target format. The JSON
// writer/reader below is the only interface between the engine and its consumers (CI gates, `merge`,
// the dashboard). Schema: reports/schema/mpaudit.report.4.json. Versioned by kSchema.
#pragma once
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "probes/divergence.h"
#include "probes/exp_histogram.h"
#include "probes/format_fit.h"
#include "probes/range_probe.h"

namespace mpa::report {

using json = probes::json;
inline constexpr const char* kSchema = "mpaudit.report/4";
// Before config.isolated and node targets' isolated_skipped.
inline constexpr const char* kSchemaV3 = "mpaudit.report/3";
// Reports of schema 2 (before placement: every node ran on the CPU) are read too.
inline constexpr const char* kSchemaV2 = "mpaudit.report/2";
// Reports of schema 1 (before consequences and verified advice) are read too, as reports with no traces.
inline constexpr const char* kSchemaV1 = "mpaudit.report/1";

enum class Verdict { Safe, Warn, Unsafe };
std::string verdict_name(Verdict v);
Verdict parse_verdict(const std::string& s);

// Thresholds that turn statistics into verdicts (defaults documented in README "Verdicts").
struct Thresholds {
  double underflow_warn_frac = 0.01;  // share of nonzero reference values flushed to zero
  double underflow_unsafe_frac = 0.25;
  double weight_underflow_warn_frac = 0.01;
  double weight_underflow_unsafe_frac = 0.5;
  // Isolated SQNR below which a node loses precision, per target format (dB).
  std::map<std::string, double> sqnr_warn_db = {
      {"fp16", 40}, {"bf16", 25}, {"tf32", 40}, {"fp8e4m3", 15}, {"fp8e5m2", 10}};
  std::map<std::string, double> sqnr_unsafe_db = {
      {"fp16", 20}, {"bf16", 12}, {"tf32", 20}, {"fp8e4m3", 8}, {"fp8e5m2", 5}};
  double jump_db = 20;  // a propagated-SQNR drop this large below a node's inputs marks an error jump
  // precision_loss needs the node itself to lose this much SQNR beyond its inputs' storage (3 dB = it at
  // least doubles the error energy it was fed).
  double own_loss_db = 3;
  probes::Tolerances tolerances;
  json to_json() const;
  static Thresholds from_json(const json& j);
};

// One set of inputs a merged report holds samples of: sample indices count within it.
struct InputSource {
  std::string inputs;  // as Config::inputs
  uint64_t seed = 0;
  int64_t samples = 0, total_samples = 0;
  std::vector<std::pair<int64_t, int64_t>> sample_ranges;
  json to_json() const;
  static InputSource from_json(const json& j);
};

struct Config {
  std::string reference = "fp32";
  std::vector<std::string> targets;
  int64_t samples = 0;        // samples audited (in this shard)
  int64_t total_samples = 0;  // samples in the whole set
  uint64_t seed = 0;
  std::string shard;  // "K/N", "partial" (a merge short of the whole set) or "" for the whole set
  // The samples held, as sorted, disjoint, non-adjacent [first, last) index ranges: a merge refuses
  // reports that hold a sample twice.
  std::vector<std::pair<int64_t, int64_t>> sample_ranges;
  std::string accumulation = "fp32";
  bool tf32 = false;
  std::string profile = "generic";
  std::string fp8_scaling = "none";    // "absmax": per-tensor scales from the reference
  std::string inputs;                  // how inputs were made ("random normal", a folder, files)
  std::vector<std::string> keep_fp32;  // top-level nodes the target runs computed in fp32 (sorted)
  bool timing = false;
  std::string backend = "cpu";  // the backend asked for (--device); nodes it could not run fell back to the CPU
  // The device that backend ran on and every choice of its that changes numbers, per run ("reference" and each
  // target): absent for the CPU, whose arithmetic docs/numerics.md describes.
  struct Device {
    std::string description;  // name, compute capability, memory, driver, runtime and library versions
    std::map<std::string, std::map<std::string, std::string>> numerics;
  };
  std::optional<Device> device;
  std::string isolated = "all";  // which nodes were also run alone in the format (audit/auditor.h IsolatedPass)
  // Set only by a merge of reports made on different inputs (another folder, seed or files): each source
  // with its samples, sorted by (inputs, seed). Then inputs, seed, samples, total_samples and sample_ranges
  // describe their union: the sources' index ranges laid end to end in this order, seed the first's.
  std::vector<InputSource> input_sources;
  // input_sources, or the one source the other fields describe.
  std::vector<InputSource> sources() const;
  // The inputs in one line for people: inputs, or each source with its samples ("samples from a/ (3 of 3);
  // samples from b/ (2 of 2)").
  std::string inputs_text() const;
  Thresholds thresholds;
  json to_json() const;
  static Config from_json(const json& j);
};

// What a value's low-precision form does downstream (src/audit/consequence.h): the value as the target run
// makes it (its producer alone on reference inputs, stored in the format) is fed to its consumers with
// every other value from the reference, and followed node by node, in the reference precision, until the
// deviation vanishes (no element off by half a format ulp or more) or reaches graph outputs. Traced on the
// samples where the value overflows, flushes or turns non-finite in the format.
struct Consequence {
  int64_t traced = 0;    // samples traced
  int64_t absorbed = 0;  // of which the deviation vanished before reaching any graph output
  int64_t cut = 0;       // of which the trace ran out of its budget before it ended (harm not ruled out)
  std::vector<std::string> absorbed_by;  // nodes whose outputs no longer deviated (sorted, unique)
  // The first node, in report order, whose traced output holds NaN where the reference is finite
  // (the value's own producer when it is NaN already); -1 / "" when none.
  int64_t harm_at_index = -1;
  std::string harm_at;
  std::map<std::string, probes::Divergence> outputs;  // graph outputs reached: traced run vs reference

  void merge(const Consequence& other);
  json to_json() const;
  static Consequence from_json(const json& j);
};

struct TensorTarget {
  probes::FormatFit fit;  // reference values against the format
  probes::ExpHistogram propagated_hist;
  probes::Divergence propagated, isolated;
  // The reference output merely stored in the format (what a consumer's isolated run is fed): the
  // floor a consumer's isolated error is measured against when blaming nodes.
  probes::Divergence stored;
  Consequence consequence;
};

// A tensor's shape over several executions (samples, loop iterations): dimensions that differ are -1, and
// where the rank differs every dimension of the largest rank is -1. Associative and commutative, so
// reports merged in any order agree with one run over all samples.
Shape merged_shape(const Shape& a, const Shape& b);

struct TensorStats {
  std::string name;
  Shape shape;  // merged_shape over every execution audited
  std::string dtype;
  bool measured = false;  // floating tensors only; integer/bool outputs carry shape and type
  probes::RangeProbe range;
  probes::ExpHistogram hist;
  std::map<std::string, TensorTarget> targets;
};

struct WeightStats {
  std::string name;
  int64_t count = 0;
  std::map<std::string, probes::FormatFit> targets;
};

struct Reason {
  std::string code;  // overflow | underflow | precision_loss | nonfinite | weight_overflow | weight_underflow
  Verdict level = Verdict::Warn;
  std::string message;
};

struct NodeTarget {
  Verdict verdict = Verdict::Safe;
  std::vector<Reason> reasons;
  double propagated_jump_db = 0;  // drop of propagated SQNR below the node's inputs
  bool kept_fp32 = false;         // computed in fp32 in this target's runs (config.keep_fp32, or inside such a node)
  // Executions whose isolated run was skipped (config.isolated "suspects" or "off"): the node's isolated
  // figures are those of the other executions; 0 where every execution has them.
  int64_t isolated_skipped = 0;
  // What the node's low-precision output does downstream, in one line ("absorbed by 'Softmax_3'", "NaN
  // reaches output 'y': 10 of 10 values"); empty when it was not traced (Consequence).
  std::string consequence;
  // Root and harm: for a root, the node downstream where its deviation first makes NaN; for a node that
  // makes NaN out of non-finite values it reads, the nodes that produced them (its roots).
  std::string harm_at;
  std::vector<std::string> roots;
};

struct NodeStats {
  int64_t index = 0;
  // Nodes inside control-flow subgraphs precede their owner (which completes after them), named by path:
  // "Loop_0/body/If_3/then/Conv_1" has scope "Loop_0/body/If_3/then"; top-level nodes have an empty scope.
  std::string name, op_type, scope;
  // The op's precision class (ops/op.h PrecisionClass: "exact", "elementwise", "transcendental",
  // "accumulating"; empty in reports of schema 1 and 2) and, for accumulating ops, where its sums run
  // ("fp32", or "fp16" under --accumulate fp16 for GEMM-like ops; empty otherwise).
  std::string op_class, sums_in;
  int64_t executions = 0;  // reference runs over samples (and loop iterations, inside a loop body)
  std::vector<std::string> inputs, outputs;
  std::vector<TensorStats> tensors;
  std::vector<WeightStats> weights;
  std::map<std::string, NodeTarget> targets;
  double time_ms_total = 0;  // reference run, summed over samples (only with config.timing)
  // The same by the device's own clock (Backend::last_run_device_seconds), where the backend that ran the
  // node has one; none where every reference run was timed by the wall clock only.
  std::optional<double> device_time_ms_total;
  // The runs ("reference" or a target's name) that ran this node on the CPU instead of config.backend, each
  // with the reason in words; empty where every run was on config.backend.
  std::map<std::string, std::string> fallbacks;
};

// What the runs moved between the host and the device of config.backend (inputs of nodes on another
// device than their producer's, graph outputs, the copies the probes read), summed over samples.
struct Transfers {
  int64_t uploads = 0, downloads = 0;
  int64_t bytes_uploaded = 0, bytes_downloaded = 0;
};

struct OutputSummary {
  std::string name;
  double max_abs_err = 0, max_rel_err = 0, cosine = 1, sqnr_db = 0;
};

// Whether the summary's keep_fp32 list was checked by auditing again with it applied (src/audit/advice.h).
struct Advice {
  bool verified = false;
  int64_t rounds = 0;  // audits run with a keep-fp32 list to verify it
  std::string note;    // why there is no verified advice, when there is none
};

struct TargetSummary {
  bool pass = true;
  std::vector<std::string> unsafe_nodes, warn_nodes, keep_fp32;
  std::string first_unsafe, first_error_jump;
  std::vector<std::string> culprits;  // by isolated contribution, worst first
  std::vector<OutputSummary> outputs;
  Advice advice;
};

// The headroom a report states for a tensor of this absmax in target `fmt`: log2(max finite / absmax),
// except 0 for FP8 targets under --fp8-scaling absmax, whose per-tensor scale puts the absmax on the max.
double headroom_bits(const Config& config, Format format, double absmax);

struct Report {
  std::string tool_version;
  std::string model_path, model_sha256;
  int64_t opset = 0;
  Config config;
  // The graph inputs (floating ones measured): the reference as fed, `stored` (= isolated = propagated)
  // as the target runs read them, converted to the format.
  std::vector<TensorStats> inputs;
  std::vector<NodeStats> nodes;
  std::map<std::string, TargetSummary> summary;
  Transfers transfers;

  // Joins statistics of the same model and config measured on other samples (fails when they differ).
  void merge(const Report& other);
};

json to_json(const Report& report);
Report from_json(const json& j);
std::string serialize(const Report& report);  // deterministic text, 1-space indent
// `check_schema`: a report of the current schema is validated against it first (merge: a corrupt shard is
// refused naming the field, not summed into wrong figures).
Report read_report(const std::string& path, bool check_schema = false);
// The same from a report's text; `what` names its source in messages.
Report parse_report(const std::string& text, const std::string& what, bool check_schema = false);
// The graph outputs as the report's summary lists them: in graph order, which a re-evaluated summary must keep
// so that a merge of shards is byte-identical to an audit of the whole set. A report of no sample (a shard of a
// set smaller than the shard count) lists none.
std::vector<std::string> graph_outputs(const Report& report);
void write_report(const std::string& path, const Report& report);  // atomic

}  // namespace mpa::report
