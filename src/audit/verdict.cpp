#include "audit/verdict.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <unordered_map>

namespace mpa {

namespace {

using report::NodeStats;
using report::Reason;
using report::Verdict;

std::string fmt_g(double v, int digits = 3) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.*g", digits, v);
  return buf;
}

std::string percent(int64_t part, int64_t whole) {
  return fmt_g(100.0 * static_cast<double>(part) / static_cast<double>(std::max<int64_t>(whole, 1))) + "%";
}

// The figures of a node's float outputs for one target, combined over its outputs.
struct NodeFigures {
  int64_t overflow = 0, flushed = 0, significant_flushed = 0, nonzero = 0, values = 0, iso_nan = 0, iso_inf = 0,
          prop_nonfinite = 0, stored_nonfinite = 0;
  double absmax = 0, iso_sqnr = probes::Divergence::kMaxSqnrDb, iso_max_rel = 0,
         prop_sqnr = probes::Divergence::kMaxSqnrDb, stored_sqnr = probes::Divergence::kMaxSqnrDb;
  bool measured = false, has_iso = false;
};

void add_tensor(NodeFigures& f, const report::TensorStats& t, const std::string& fmt) {
  if (!t.measured) return;
  const report::TensorTarget& tt = t.targets.at(fmt);
  f.measured = true;
  f.overflow += tt.fit.overflow;
  f.flushed += tt.fit.flush_to_zero;
  f.significant_flushed += tt.fit.significant_flush;
  f.nonzero += tt.fit.nonzero;
  f.values += t.range.count;
  f.absmax = std::max(f.absmax, t.range.absmax());
  f.prop_nonfinite += tt.propagated.nonfinite();
  if (tt.propagated.compared) f.prop_sqnr = std::min(f.prop_sqnr, tt.propagated.sqnr_db());
  if (tt.stored.compared) f.stored_sqnr = std::min(f.stored_sqnr, tt.stored.sqnr_db());
  f.stored_nonfinite += tt.stored.nonfinite();
  if (tt.isolated.ref_finite) {
    f.has_iso = true;
    f.iso_nan += tt.isolated.nan;
    f.iso_inf += tt.isolated.inf;
    if (tt.isolated.compared && tt.isolated.sum_ref_sq.value() > 0) {
      f.iso_sqnr = std::min(f.iso_sqnr, tt.isolated.sqnr_db());
      f.iso_max_rel = std::max(f.iso_max_rel, tt.isolated.max_rel);
    }
  }
}

NodeFigures figures_of(const NodeStats& node, const std::string& fmt) {
  NodeFigures f;
  for (const auto& t : node.tensors) add_tensor(f, t, fmt);
  return f;
}

}  // namespace

void evaluate(report::Report& report, const std::vector<std::string>& graph_outputs) {
  const report::Thresholds& th = report.config.thresholds;
  std::unordered_map<std::string, size_t> producer;
  std::unordered_map<std::string, std::vector<size_t>> consumers;
  for (size_t i = 0; i < report.nodes.size(); ++i) {
    for (const auto& o : report.nodes[i].outputs) producer[o] = i;
    for (const auto& in : report.nodes[i].inputs) consumers[in].push_back(i);
  }

  for (const std::string& fmt : report.config.targets) {
    const Format format = *parse_format(fmt);
    const Format storage = format == Format::TF32 ? Format::FP32 : format;
    const FormatTraits& traits = format_traits(storage);
    const double warn_db = th.sqnr_warn_db.count(fmt) ? th.sqnr_warn_db.at(fmt) : 40;
    const double unsafe_db = th.sqnr_unsafe_db.count(fmt) ? th.sqnr_unsafe_db.at(fmt) : 20;
    report::TargetSummary summary;
    // Figures per value, so that a node is compared with the outputs it reads, not its producers' worst.
    std::unordered_map<std::string, NodeFigures> value_figures;
    std::unordered_map<std::string, const report::TensorStats*> graph_inputs;
    for (const auto& t : report.inputs) {
      add_tensor(value_figures[t.name], t, fmt);
      if (t.measured) graph_inputs[t.name] = &t;
    }
    std::vector<std::pair<double, size_t>> ranking;  // (isolated score, node) for culprits

    for (size_t i = 0; i < report.nodes.size(); ++i) {
      NodeStats& node = report.nodes[i];
      report::NodeTarget target;
      const NodeFigures f = figures_of(node, fmt);
      // What the node reads from graph inputs and earlier nodes (initializers have no figures).
      std::vector<const NodeFigures*> read;
      for (const auto& in : node.inputs) {
        auto p = producer.find(in);
        auto v = value_figures.find(in);
        const bool earlier = p == producer.end() ? graph_inputs.count(in) > 0 : p->second < i;
        if (earlier && v != value_figures.end()) read.push_back(&v->second);
      }
      auto add = [&](const char* code, Verdict level, std::string message) {
        target.reasons.push_back({code, level, std::move(message)});
        target.verdict = std::max(target.verdict, level);
      };
      // A node kept in fp32 computes its own values right; what can still go wrong is its output meeting
      // the format on the way to a consumer that computes in it.
      const bool kept = node.targets[fmt].kept_fp32;
      target.kept_fp32 = kept;
      std::string read_in_format;  // a consumer in the format, for a kept node
      if (kept)
        for (const auto& out : node.outputs)
          for (size_t c : consumers[out])
            if (read_in_format.empty() && !report.nodes[c].targets[fmt].kept_fp32)
              read_in_format = report.nodes[c].name;
      const std::string boundary = read_in_format.empty() ? "" : " where '" + read_in_format + "' reads it in " + fmt;
      if (f.overflow > 0 && (!kept || !read_in_format.empty()))
        add("overflow", Verdict::Unsafe,
            "reference absmax " + fmt_g(f.absmax) + " exceeds " + fmt + " max " + fmt_g(traits.max_finite, 6) + " in " +
                std::to_string(f.overflow) + " of " + std::to_string(f.values) + " values" + boundary);
      if (f.nonzero > 0 && (!kept || !read_in_format.empty())) {
        const double frac = static_cast<double>(f.significant_flushed) / static_cast<double>(f.nonzero);
        if (f.significant_flushed > 0 && frac >= th.underflow_warn_frac)
          add("underflow", frac >= th.underflow_unsafe_frac ? Verdict::Unsafe : Verdict::Warn,
              percent(f.significant_flushed, f.nonzero) + " of nonzero reference values (" +
                  std::to_string(f.significant_flushed) + " of " + std::to_string(f.nonzero) + ") flush to zero in " +
                  fmt + " (|x| <= " + fmt_g(traits.min_subnormal / 2) + ") while within " +
                  std::to_string(traits.mantissa_bits + 1) + " bits of the tensor's largest value" + boundary);
      }
      // Graph inputs beyond the format: the node reads them converted (a node kept in fp32 reads them as given).
      for (const auto& in : node.inputs) {
        auto g = graph_inputs.find(in);
        if (kept || g == graph_inputs.end()) continue;
        const report::TensorStats& t = *g->second;
        const probes::FormatFit& fit = t.targets.at(fmt).fit;
        if (fit.overflow > 0)
          add("overflow", Verdict::Unsafe,
              "graph input '" + in + "' (absmax " + fmt_g(t.range.absmax()) + ") exceeds " + fmt + " max " +
                  fmt_g(traits.max_finite, 6) + " in " + std::to_string(fit.overflow) + " of " +
                  std::to_string(t.range.count) + " values, and the node reads it in " + fmt);
        const double frac = fit.significant_flush_fraction();
        if (fit.significant_flush > 0 && frac >= th.underflow_warn_frac)
          add("underflow", frac >= th.underflow_unsafe_frac ? Verdict::Unsafe : Verdict::Warn,
              "graph input '" + in + "' has " + percent(fit.significant_flush, fit.nonzero) +
                  " of its nonzero values flushing to zero in " + fmt + " while within " +
                  std::to_string(traits.mantissa_bits + 1) + " bits of its largest value, and the node reads it in " +
                  fmt);
      }
      // Non-finite values the node alone creates, beyond those its inputs already carry once stored in the
      // format (a Reshape of an overflowed tensor passes its Inf on; the Mul that computes 0 * -inf makes NaN).
      int64_t inherited_nonfinite = 0;
      for (const NodeFigures* r : read) inherited_nonfinite += r->stored_nonfinite;
      for (const auto& w : node.weights) inherited_nonfinite += w.targets.at(fmt).overflow;
      if (!kept && f.iso_nan + f.iso_inf > inherited_nonfinite)
        add("nonfinite", Verdict::Unsafe,
            "the node alone in " + fmt + " gives " + std::to_string(f.iso_nan) + " NaN and " + std::to_string(f.iso_inf) +
                " Inf where the reference is finite");
      // Non-finite values that first appear in the propagated run here, though the node alone stays finite.
      bool inputs_nonfinite = false;
      for (const NodeFigures* r : read) inputs_nonfinite |= r->prop_nonfinite > 0;
      if (!kept && f.iso_nan + f.iso_inf == 0 && f.prop_nonfinite > 0 && !inputs_nonfinite)
        add("nonfinite", Verdict::Warn,
            "the propagated " + fmt + " run first turns non-finite here (" + std::to_string(f.prop_nonfinite) +
                " values) from errors accumulated upstream");
      // The node's own contribution: how far its isolated SQNR falls below that of its inputs merely stored
      // in the format (graph inputs and initializers count as exact). A node fed already-degraded values
      // (a consumer of subnormals) is not blamed for them.
      double input_floor = probes::Divergence::kMaxSqnrDb;
      for (const NodeFigures* r : read)
        if (r->measured) input_floor = std::min(input_floor, r->stored_sqnr);
      const double own_loss_db = input_floor - f.iso_sqnr;
      if (!kept && f.has_iso && f.iso_sqnr < warn_db && own_loss_db >= th.own_loss_db)
        add("precision_loss", f.iso_sqnr < unsafe_db ? Verdict::Unsafe : Verdict::Warn,
            "isolated " + fmt + " SQNR " + fmt_g(f.iso_sqnr) + " dB (max rel err " + fmt_g(f.iso_max_rel) +
                ") is below the " + fmt_g(f.iso_sqnr < unsafe_db ? unsafe_db : warn_db) + " dB limit");
      for (const auto& w : node.weights) {
        if (kept) break;  // its weights stay in fp32
        const probes::FormatFit& fit = w.targets.at(fmt);
        if (fit.overflow > 0)
          add("weight_overflow", Verdict::Unsafe,
              "weight '" + w.name + "' has " + std::to_string(fit.overflow) + " of " + std::to_string(w.count) +
                  " values beyond " + fmt + " max " + fmt_g(traits.max_finite, 6));
        const double frac = fit.significant_flush_fraction();
        if (fit.significant_flush > 0 && frac >= th.weight_underflow_warn_frac)
          add("weight_underflow", frac >= th.weight_underflow_unsafe_frac ? Verdict::Unsafe : Verdict::Warn,
              "weight '" + w.name + "' has " + std::to_string(fit.significant_flush) + " of " +
                  std::to_string(fit.nonzero) + " nonzero values flushing to zero in " + fmt +
                  " while within " + std::to_string(traits.mantissa_bits + 1) + " bits of its largest value");
      }

      // Propagated-error jump: how far the propagated SQNR falls below that of the node's inputs.
      double input_level = probes::Divergence::kMaxSqnrDb;
      for (const NodeFigures* r : read)
        if (r->measured) input_level = std::min(input_level, r->prop_sqnr);
      target.propagated_jump_db = f.measured ? std::max(0.0, input_level - f.prop_sqnr) : 0.0;
      const bool jump = f.measured && ((target.propagated_jump_db >= th.jump_db && f.prop_sqnr < warn_db) ||
                                       (f.prop_nonfinite > 0 && !inputs_nonfinite));
      if (jump && summary.first_error_jump.empty()) summary.first_error_jump = node.name;

      if (target.verdict == Verdict::Unsafe) summary.unsafe_nodes.push_back(node.name);
      if (target.verdict == Verdict::Warn) summary.warn_nodes.push_back(node.name);
      if (target.verdict != Verdict::Safe) {
        const bool broken = f.overflow > 0 || f.iso_nan + f.iso_inf > 0;
        // Broken nodes (overflow, NaN/Inf) lead, earliest first: later ones usually carry the first one's values.
        ranking.emplace_back(broken ? -1e12 + static_cast<double>(i) : -own_loss_db, i);
      }
      node.targets[fmt] = std::move(target);
      for (const auto& t : node.tensors) add_tensor(value_figures[t.name], t, fmt);
    }
    std::stable_sort(ranking.begin(), ranking.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t r = 0; r < ranking.size() && r < 10; ++r) summary.culprits.push_back(report.nodes[ranking[r].second].name);
    summary.first_unsafe = summary.unsafe_nodes.empty() ? "" : summary.unsafe_nodes.front();
    // What to deploy in fp32: the nodes already kept, and the unsafe ones; a node inside a subgraph is kept
    // with its top-level owner (the first main-graph node after it in the report).
    std::vector<size_t> owner(report.nodes.size());
    for (size_t i = report.nodes.size(); i-- > 0;)
      owner[i] = report.nodes[i].scope.empty() || i + 1 == report.nodes.size() ? i : owner[i + 1];
    for (size_t i = 0; i < report.nodes.size(); ++i) {
      const report::NodeTarget& t = report.nodes[i].targets.at(fmt);
      const std::string& name = report.nodes[owner[i]].name;
      if ((t.kept_fp32 || t.verdict == Verdict::Unsafe) &&
          std::find(summary.keep_fp32.begin(), summary.keep_fp32.end(), name) == summary.keep_fp32.end())
        summary.keep_fp32.push_back(name);
    }
    summary.pass = summary.unsafe_nodes.empty();
    for (const std::string& out : graph_outputs) {
      auto p = producer.find(out);
      if (p == producer.end()) continue;
      for (const auto& t : report.nodes[p->second].tensors) {
        if (t.name != out || !t.measured) continue;
        // NaN/Inf where the reference is finite makes the errors unbounded and cosine and SQNR undefined
        // (null in JSON), which fails every gate on them; so does an output with no element to compare.
        const probes::Divergence& d = t.targets.at(fmt).propagated;
        const double undefined = std::nan("");
        if (d.nonfinite())
          summary.outputs.push_back({out, INFINITY, INFINITY, undefined, undefined});
        else if (d.compared == 0)
          summary.outputs.push_back({out, undefined, undefined, undefined, undefined});
        else
          summary.outputs.push_back({out, d.max_abs, d.max_rel, d.cosine(), d.sqnr_db()});
      }
    }
    report.summary[fmt] = std::move(summary);
  }
}

}  // namespace mpa
