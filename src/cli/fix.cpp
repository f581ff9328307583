// `mpaudit fix`: the smallest verified set of nodes to keep in FP32 (fix/keep_search.h), seeded by an
// audit of the same model and samples, judged by real mixed-precision runs against output gates; a
// summary, the JSON fix report, and the keep-set as flags for the tools people deploy with.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <set>

#include "cli/arg_groups.h"
#include "cli/audit_job.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "fix/export_onnx.h"
#include "fix/keep_list.h"
#include "fix/keep_search.h"
#include "fix/mixed_runs.h"
#include "fix/presets.h"
#include "io/npy.h"
#include "reports/fix_report.h"

namespace mpa::cli {

namespace {

struct FixArgs {
  AuditJobArgs job;
  std::vector<std::string> gates;
  std::string json_path, audit_json_path;
  std::vector<std::string> keep_lists;  // FORMAT=PATH
  std::string export_onnx;
  bool keep_io_types = true;
  int max_runs = 64;
  bool quiet = false;
};

// Every top-level node with a measured floating output, strongest evidence first: unsafe, then warned,
// then by how far the propagated error drops at the node (dB), then in graph order.
std::vector<std::string> candidates_by_evidence(const report::Report& rep, const std::string& target) {
  struct Ranked {
    const report::NodeStats* node;
    int level;
    double jump;
  };
  std::vector<Ranked> ranked;
  for (const report::NodeStats& n : rep.nodes) {
    if (!n.scope.empty()) continue;
    const bool floating = std::any_of(n.tensors.begin(), n.tensors.end(), [](const auto& t) { return t.measured; });
    const auto t = n.targets.find(target);
    if (!floating || t == n.targets.end()) continue;
    ranked.push_back({&n,
                      t->second.verdict == report::Verdict::Unsafe ? 0
                      : t->second.verdict == report::Verdict::Warn ? 1
                                                                   : 2,
                      t->second.propagated_jump_db});
  }
  std::stable_sort(ranked.begin(), ranked.end(), [](const Ranked& a, const Ranked& b) {
    return a.level != b.level ? a.level < b.level : a.jump > b.jump;
  });
  std::vector<std::string> names;
  for (const Ranked& r : ranked) names.push_back(r.node->name);
  return names;
}

std::vector<report::FixGateValue> to_report(const std::vector<fix::GateValue>& values) {
  std::vector<report::FixGateValue> out;
  for (const fix::GateValue& v : values) out.push_back({v.gate, v.output, v.value, v.held});
  return out;
}

// The audit's share of full-run equivalents: its reference and target passes, and the nodes it ran alone.
double audit_run_equivalents(const report::Report& rep, const std::string& target) {
  int64_t executions = 0, isolated = 0;
  for (const report::NodeStats& n : rep.nodes) {
    if (!n.scope.empty()) continue;
    executions += n.executions;
    const auto t = n.targets.find(target);
    isolated += n.executions - (t == n.targets.end() ? n.executions : t->second.isolated_skipped);
  }
  return 2.0 + (executions ? static_cast<double>(isolated) / static_cast<double>(executions) : 0.0);
}

// The whole model in the target format is the audit's own target pass (with the same forced nodes): its
// outputs' figures are read from the report rather than run again. The report holds all but the rows'
// arg-max agreement, so a top1_agree gate runs it. Empty when an output is not in the report.
std::optional<std::vector<fix::OutputFigures>> whole_model_from_audit(const report::Report& rep,
                                                                      const std::string& target,
                                                                      const std::vector<std::string>& outputs) {
  std::vector<fix::OutputFigures> figures;
  for (const std::string& name : outputs) {
    const report::TensorTarget* found = nullptr;
    for (const report::NodeStats& n : rep.nodes)
      for (const report::TensorStats& t : n.tensors)
        if (n.scope.empty() && t.name == name && t.measured && t.targets.count(target)) found = &t.targets.at(target);
    if (!found) return std::nullopt;
    figures.push_back({name, found->propagated, 0, 0});
  }
  return figures;
}

// The top-level float32 values the reference run saw (graph inputs and node outputs): what the export
// converts.
std::set<std::string> float32_values(const report::Report& rep, const Graph& graph) {
  std::set<std::string> values;
  for (const ValueInfo& in : graph.inputs)
    if (in.elem_type == static_cast<int32_t>(DType::Float32)) values.insert(in.name);
  for (const report::NodeStats& n : rep.nodes)
    if (n.scope.empty())
      for (const report::TensorStats& t : n.tensors)
        if (t.dtype == dtype_name(DType::Float32)) values.insert(t.name);
  return values;
}

// The worst over a node's outputs in one run.
report::FixNodeRun worst_of(const std::vector<probes::Divergence>& outputs) {
  report::FixNodeRun worst;
  const auto least = [](double a, double b) { return std::isnan(a) || b < a ? b : a; };
  const auto most = [](double a, double b) { return std::isnan(a) || b > a ? b : a; };
  for (const probes::Divergence& d : outputs) {
    worst.nonfinite += d.nonfinite();
    if (d.compared == 0) continue;
    worst.sqnr_db = least(worst.sqnr_db, d.sqnr_db());
    worst.max_rel_err = most(worst.max_rel_err, d.max_rel);
    worst.max_abs_err = most(worst.max_abs_err, d.max_abs);
  }
  return worst;
}

// Every top-level node's outputs with the whole model in the target format and, when one meets the gates, with
// the keep-set (both with the forced nodes), in one more pass.
std::vector<report::FixNode> node_figures(const fix::MixedRuns& runs, const Graph& graph,
                                          const std::vector<std::string>& forced, const fix::SearchResult& result,
                                          int64_t* passes) {
  std::vector<std::vector<std::string>> keep_sets{forced};
  if (result.met) {
    keep_sets.push_back(result.keep);
    keep_sets.back().insert(keep_sets.back().end(), forced.begin(), forced.end());
  }
  *passes = static_cast<int64_t>(keep_sets.size()) + 1;
  std::vector<report::FixNode> nodes;
  for (const fix::MixedRuns::NodeFigures& f : runs.node_figures(keep_sets)) {
    const Node& node = graph.nodes[f.node];
    report::FixNode n{node.name, node.op_type,
                      std::find(result.keep.begin(), result.keep.end(), node.name) != result.keep.end(),
                      worst_of(f.runs[0]), std::nullopt};
    if (result.met) n.after = worst_of(f.runs[1]);
    nodes.push_back(std::move(n));
  }
  return nodes;
}

std::string gate_line(const fix::GateValue& v) {
  char value[32];
  std::snprintf(value, sizeof value, "%.4g", v.value);
  return v.gate + " on '" + v.output + "': " + (std::isnan(v.value) ? "n/a" : value) + (v.held ? "" : " (fails)");
}

void print_summary(const report::FixReport& r, const fix::SearchResult& result,
                   const std::vector<fix::GateValue>& before) {
  std::printf(
      "fix %s: %s\n", r.target.c_str(),
      r.met ? (r.keep.empty() ? "the whole model meets the gates in the target format; nothing to keep"
                              : ("keep " + std::to_string(r.keep.size()) + " node" + (r.keep.size() == 1 ? "" : "s") +
                                 " in fp32" + (r.minimal ? " (each one needed: without it a gate fails)" : ""))
                                    .c_str())
            : "no keep-set meets the gates");
  for (const report::KeptNode& k : r.keep) {
    std::string why;
    for (const report::FixGateValue& g : k.needed_because)
      why += (why.empty() ? "" : "; ") + gate_line({g.gate, g.output, g.value, g.held});
    if (!why.empty() && k.needed_samples < r.samples)
      why += " (on " + std::to_string(k.needed_samples) + " of " + std::to_string(r.samples) +
             " samples: it fails whatever the others give)";
    std::printf("  %s (%s)%s%s\n", k.node.c_str(), k.op_type.c_str(),
                k.audit_verdict == "safe" ? "" : (", audit: " + k.audit_verdict).c_str(),
                why.empty() ? "" : (": without it " + why).c_str());
  }
  std::printf("gates, all in %s -> with the keep-set:\n", r.target.c_str());
  for (size_t i = 0; i < before.size(); ++i)
    std::printf(
        "  %s -> %s\n", gate_line(before[i]).c_str(),
        result.trials.empty() || !r.met
            ? "-"
            : gate_line(fix::GateValue{r.after[i].gate, r.after[i].output, r.after[i].value, r.after[i].held}).c_str());
  for (const report::PresetComparison& p : r.presets) {
    std::string worst;
    for (const report::FixGateValue& g : p.gates)
      if (!g.held && worst.empty()) worst = ": " + gate_line({g.gate, g.output, g.value, g.held});
    std::printf("preset %s: %lld node%s in fp32, %s%s\n", p.name.c_str(), static_cast<long long>(p.kept),
                p.kept == 1 ? "" : "s", p.pass ? "meets the gates" : "fails", worst.c_str());
  }
  if (!r.note.empty()) std::printf("note: %s\n", r.note.c_str());
  if (r.exported) {
    const fix::ExportResult& e = r.exported->result;
    std::printf("exported %s: %lld nodes in %s, %lld in fp32, %lld casts, %lld initializers converted\n",
                r.exported->path.c_str(), static_cast<long long>(e.nodes_in_target), r.exported->format.c_str(),
                static_cast<long long>(e.nodes_in_fp32), static_cast<long long>(e.casts_inserted),
                static_cast<long long>(e.initializers_converted));
    for (const fix::InitializerKeptFp32& i : e.initializers_kept_fp32)
      std::printf("  initializer '%s' kept in fp32: %lld elements would %s\n", i.name.c_str(),
                  static_cast<long long>(i.elements), i.reason == "overflow" ? "overflow" : "flush to zero");
    for (const fix::NodeKeptFp32& n : e.nodes_kept_fp32)
      std::printf("  %s (%s) exported in fp32: %s\n", n.node.c_str(), n.op_type.c_str(), n.reason.c_str());
  }
  std::printf(
      "cost: %.2f full-run equivalents (audit %.2f, reference %lld, %lld mixed-precision runs %.2f), and %lld runs "
      "of the presets\n",
      r.total_run_equivalents(), r.audit_run_equivalents, static_cast<long long>(r.reference_runs),
      static_cast<long long>(r.mixed_runs), r.mixed_run_equivalents, static_cast<long long>(r.comparison_runs));
}

int fix_model(const FixArgs& args) {
  require(args.job.targets.size() <= 1, "fix searches one target format at a time: give one --target");
  const AuditJob job(args.job);
  const std::string target(format_name(job.options().targets.at(0)));
  const std::vector<fix::KeepListExport> exports = fix::parse_keep_list_exports(args.keep_lists);
  for (const std::string* path : {&args.json_path, &args.audit_json_path})
    if (!path->empty()) check_can_write(*path);
  for (const fix::KeepListExport& e : exports) check_can_write(e.path);
  const fix::ExportOptions export_options{job.options().targets.at(0), args.keep_io_types};
  if (!args.export_onnx.empty()) {
    require(export_options.target == Format::FP16 || export_options.target == Format::BF16,
            "--export-onnx writes fp16 or bf16 models; --target is " + target);
    check_can_write(args.export_onnx);
  }

  // The audit: which nodes are unsafe and where the error jumps, to order the search.
  Progress bar(!args.quiet, "audit", "node runs");
  AuditRun audit = job.run(
      args.job.keep_fp32, [&](int64_t done, int64_t total, const auto&) { bar.show(done, total); }, nullptr, "", true);
  const auto [first, last] = job.sample_range();
  fix::MixedRuns runs(job.model().graph, job.samples(), first, last, job.options(), !args.keep_io_types);
  // The audit's reference pass is the reference the runs compare with and reuse: it does not run again.
  runs.take_reference(std::move(audit.reference_outputs), std::move(audit.reference_records));
  std::vector<fix::OutputGate> gates;
  for (const std::string& g : args.gates.empty() ? fix::default_output_gates() : args.gates)
    gates.push_back(fix::parse_output_gate(g, runs.outputs()));

  const std::vector<std::string> forced = job.keep_fp32();
  const bool wants_rows =
      std::any_of(gates.begin(), gates.end(), [](const fix::OutputGate& g) { return g.metric == "top1_agree"; });
  // The audit fed the inputs in float32: with inputs in the target format the whole model runs again.
  const auto whole_model =
      wants_rows || !args.keep_io_types ? std::nullopt : whole_model_from_audit(audit.report, target, runs.outputs());
  const int64_t samples = last - first;
  // The search judges sets on the samples in play, the first to fail a run leading, where a failure there is
  // a failure on every sample (fix/output_gates.h); otherwise every run is on every sample.
  const bool by_samples_in_play = std::all_of(gates.begin(), gates.end(), fix::bounded_by_some_samples);
  // `to_the_end`: every sample runs also where a gate already failed whatever the others give (the presets'
  // figures are shown as they are).
  const auto judge = [&](const std::vector<std::string>& keep, bool every_sample, bool to_the_end) {
    std::vector<std::string> kept = keep;
    kept.insert(kept.end(), forced.begin(), forced.end());
    fix::Verdict v;
    const int64_t spent = runs.node_runs();
    const fix::MixedRuns::Settled settled = [&](const std::vector<fix::OutputFigures>& bounded) {
      return !to_the_end && fix::fails_whatever_the_rest(gates, bounded);
    };
    const fix::MixedRuns::Run run =
        keep.empty() && whole_model ? fix::MixedRuns::Run{*whole_model, samples, true}
                                    : runs.run(kept, settled, every_sample || !by_samples_in_play);
    v.gates = fix::check_output_gates(gates, run.figures);
    v.pass = fix::all_held(v.gates);
    v.cost = runs.run_equivalents(runs.node_runs() - spent);
    v.samples = run.samples;
    v.every_sample = run.every_sample;
    if (!args.quiet) {
      const std::string on = run.samples < samples ? " on " + std::to_string(run.samples) + " of " +
                                                         std::to_string(samples) + " samples"
                                                   : "";
      std::fprintf(stderr, "run %lld: %zu node%s in fp32 (%.2f full-run equivalents): %s\n",
                   static_cast<long long>(runs.runs()), keep.size(), keep.size() == 1 ? "" : "s", v.cost,
                   (v.pass ? "gates hold" + on : "a gate fails" + on + (on.empty() ? "" : ", whatever the others give"))
                       .c_str());
    }
    return v;
  };
  const fix::Verifier verify = [&](const std::vector<std::string>& keep, bool every_sample) {
    return judge(keep, every_sample, false);
  };
  const report::TargetSummary& summary = audit.report.summary.at(target);
  const std::vector<fix::MixedRuns::InputOverflow> overflowing =
      args.keep_io_types ? std::vector<fix::MixedRuns::InputOverflow>{} : runs.inputs_overflowing();
  fix::SearchResult result = fix::search_keep_set(summary.keep_fp32, candidates_by_evidence(audit.report, target),
                                                  verify, {args.max_runs, !overflowing.empty()});
  for (const fix::MixedRuns::InputOverflow& o : overflowing) {
    char text[256];
    std::snprintf(text, sizeof text,
                  "; input '%s' overflows %s before any node runs (--keep-io-types false): %lld of %lld values "
                  "beyond %g (absmax %g)",
                  o.input.c_str(), target.c_str(), static_cast<long long>(o.values), static_cast<long long>(o.of),
                  format_traits(job.options().targets.at(0)).max_finite, o.absmax);
    if (!result.met) result.note += text;
  }

  const int64_t search_runs = runs.runs();
  const double search_run_equivalents = runs.run_equivalents();
  const bool reference_for_search = runs.reference_ran();
  // The textbook recipes on the same samples: does one of them meet the gates, and with how many nodes?
  std::vector<report::PresetComparison> presets;
  for (const fix::KeepPreset& preset : fix::keep_presets()) {
    const std::vector<std::string> nodes = fix::nodes_of_ops(*job.model().graph, preset.ops);
    const auto same_set = [&](const fix::Trial& t) {
      std::vector<std::string> a = t.keep, b = nodes;
      std::sort(a.begin(), a.end());
      std::sort(b.begin(), b.end());
      return a == b && t.verdict.samples == samples;
    };
    const auto known = std::find_if(result.trials.begin(), result.trials.end(), same_set);
    const fix::Verdict v = known != result.trials.end() ? known->verdict : judge(nodes, true, true);
    presets.push_back({preset.name, static_cast<int64_t>(nodes.size()), v.pass, to_report(v.gates)});
  }

  report::FixReport r;
  r.tool_version = MPA_VERSION;
  r.model_path = args.job.model;
  r.model_sha256 = job.model_sha256();
  r.target = target;
  r.reference = args.job.reference;
  r.inputs = audit.report.config.inputs;
  r.samples = samples;
  for (const fix::OutputGate& g : gates) r.gates.push_back(g.text);
  r.forced_fp32 = forced;
  r.met = result.met;
  r.minimal = result.minimal;
  r.note = result.note;
  for (const std::string& name : result.keep) {
    const auto node = std::find_if(audit.report.nodes.begin(), audit.report.nodes.end(),
                                   [&](const report::NodeStats& n) { return n.scope.empty() && n.name == name; });
    report::KeptNode k{name, node->op_type, node->outputs, "safe", {}, {}};
    const auto t = node->targets.find(target);
    if (t != node->targets.end()) {
      k.audit_verdict = report::verdict_name(t->second.verdict);
      for (const report::Reason& reason : t->second.reasons) k.audit_reasons.push_back(reason.code);
    }
    const auto why = result.needed_because.find(name);
    if (why != result.needed_because.end()) {
      k.needed_because = to_report(why->second.failing);
      k.needed_samples = why->second.samples;
    }
    r.keep.push_back(std::move(k));
  }
  std::vector<fix::GateValue> before;
  if (!result.trials.empty()) {
    before = result.trials.front().verdict.gates;
    r.before = to_report(before);
    // The last run of the final set: the trial whose keep equals it.
    for (auto t = result.trials.rbegin(); t != result.trials.rend(); ++t)
      if (t->keep == result.keep) {
        r.after = to_report(t->verdict.gates);
        break;
      }
  }
  for (const fix::Trial& t : result.trials)
    r.trials.push_back(
        {t.purpose, static_cast<int64_t>(t.keep.size()), t.verdict.pass, t.verdict.cost, t.verdict.samples});
  r.audit_run_equivalents = audit_run_equivalents(audit.report, target);
  r.reference_runs = reference_for_search ? 1 : 0;
  r.mixed_runs = search_runs;
  r.mixed_run_equivalents = search_run_equivalents;
  r.comparison_runs = runs.runs() - search_runs + (runs.reference_ran() && !reference_for_search ? 1 : 0);
  r.presets = std::move(presets);
  if (!args.json_path.empty()) r.nodes = node_figures(runs, *job.model().graph, forced, result, &r.node_figure_runs);

  if (!args.export_onnx.empty() && r.met) {
    std::set<std::string> fp32_nodes(result.keep.begin(), result.keep.end());
    fp32_nodes.insert(forced.begin(), forced.end());
    std::string bytes;
    report::FixExport e{
        args.export_onnx, target, args.keep_io_types,
        fix::export_mixed_precision(args.job.model, fp32_nodes, float32_values(audit.report, *job.model().graph),
                                    export_options, &bytes)};
    write_file_atomic(args.export_onnx, bytes);
    r.exported = std::move(e);
  } else if (!args.export_onnx.empty()) {
    std::fprintf(stderr, "mpaudit fix: %s not written: no keep-set meets the gates\n", args.export_onnx.c_str());
  }
  if (!args.json_path.empty()) write_file_atomic(args.json_path, report::serialize(r));
  if (!args.audit_json_path.empty()) report::write_report(args.audit_json_path, audit.report);
  for (const fix::KeepListExport& e : exports)
    write_file_atomic(e.path, fix::keep_list_text(e.format, result.keep, forced, args.job.model, target));
  if (!args.quiet) print_summary(r, result, before);
  return r.met ? 0 : 1;
}

}  // namespace

Action add_fix(CLI::App& app) {
  auto a = std::make_shared<FixArgs>();
  app.add_option("model", a->job.model, "ONNX model file")->required();
  // The search reads the audit's verdicts and propagated error, which `suspects` gives as `all` does, at a
  // fraction of the isolated pass's cost (the search's own cost counts it).
  a->job.isolated = "suspects";
  add_audit_job_options(app, a->job);
  app.add_option("--gate", a->gates,
                 "what the mixed-precision model's outputs must meet, e.g. 'max_rel_err<=1e-3', 'cosine>=0.9999', "
                 "'top1_agree>=0.99', 'output[boxes].max_abs_err<=0.05' (repeatable; default: every output "
                 "element within the tolerances, mismatch_frac<=0, and nonfinite<=0)");
  app.add_option("--json", a->json_path, "write the JSON fix report here (atomically)")->check(kNonEmptyPath);
  app.add_option("--audit-json", a->audit_json_path,
                 "write the audit that seeded the search here (the report `mpaudit view AUDIT.json --fix FIX.json` "
                 "shows the fix report over)")
      ->check(kNonEmptyPath);
  app.add_option("--export-keep-list", a->keep_lists,
                 "FORMAT=FILE: the keep-set as flags for trtexec, polygraphy, autocast (ModelOpt), "
                 "onnxconverter (onnxconverter-common's node_block_list) or names (one per line); repeatable");
  app.add_option("--export-onnx", a->export_onnx,
                 "write the mixed-precision model here: the keep-set (and --keep-fp32) in fp32, every other node in "
                 "the target format (fp16 or bf16), Casts at the borders; only when the gates are met")
      ->check(kNonEmptyPath);
  app.add_option("--keep-io-types", a->keep_io_types,
                 "true (default): the exported model's float inputs and outputs stay float32; false: they take "
                 "the target format");
  app.add_option("--max-runs", a->max_runs, "the most mixed-precision runs the search may make (default 64)")
      ->check(CLI::Range(1, 100000));
  app.add_flag("--quiet", a->quiet, "no progress and no summary; the exit code still tells");
  return [a] { return naming_file(a->job.model, [&] { return fix_model(*a); }); };
}

}  // namespace mpa::cli
