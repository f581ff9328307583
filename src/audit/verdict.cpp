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
  report::Consequence consequence;  // of the node's outputs together
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
  f.consequence.merge(tt.consequence);
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

std::string count_of(int64_t part, int64_t whole) { return std::to_string(part) + " of " + std::to_string(whole); }

// What a traced consequence says: how bad it is, in one line.
struct Judgement {
  enum Grade { Untraced, Harmless, Noticeable, Harmful } grade = Untraced;
  std::string text;
};

// `self`: the node whose outputs were traced (its own NaN is not news), or "" for a graph input.
Judgement judge(const report::Consequence& c, double warn_db, double unsafe_db,
                const std::unordered_map<std::string, bool>& output_is_float, const std::string& self) {
  Judgement j;
  if (c.traced == 0) return j;
  auto worsen = [&](Judgement::Grade g, const std::string& text) {
    j.grade = std::max(j.grade, g);
    j.text += (j.text.empty() ? "" : "; ") + text;
  };
  j.grade = Judgement::Harmless;
  for (const auto& [name, d] : c.outputs) {
    auto is_float = output_is_float.find(name);
    if (is_float != output_is_float.end() && !is_float->second) {
      worsen(Judgement::Harmful, "changes output '" + name + "'");
    } else if (d.nonfinite() > 0) {
      const std::string what = d.nan > 0 && d.inf > 0 ? "NaN and Inf" : d.nan > 0 ? "NaN" : "Inf";
      worsen(Judgement::Harmful, what + " reaches output '" + name + "': " + count_of(d.nonfinite(), d.ref_finite) +
                                     " values");
    } else if (d.compared > 0) {
      const double sqnr = d.sqnr_db();
      const Judgement::Grade g = sqnr < unsafe_db  ? Judgement::Harmful
                                 : sqnr < warn_db ? Judgement::Noticeable
                                                  : Judgement::Harmless;
      worsen(g, "reaches output '" + name + "' at " + fmt_g(sqnr) + " dB SQNR from this alone" +
                    (g == Judgement::Harmless ? " (within the " + fmt_g(warn_db) + " dB limit)" : ""));
    }
  }
  if (c.cut > 0)
    worsen(Judgement::Harmful, "not traced to its end in " + count_of(c.cut, c.traced) +
                                   " samples (the sample's budget of extra node runs was spent), so harm is not ruled out");
  if (c.absorbed > 0) {
    std::string by = c.absorbed_by.empty() ? "" : " by '" + c.absorbed_by.front() + "'";
    if (c.absorbed_by.size() > 1) by += " and " + std::to_string(c.absorbed_by.size() - 1) + " more";
    worsen(Judgement::Harmless, "absorbed" + by + (c.absorbed < c.traced ? " in " + count_of(c.absorbed, c.traced) + " samples" : ""));
  }
  if (!c.harm_at.empty() && c.harm_at != self) j.text += "; NaN first appears at '" + c.harm_at + "'";
  return j;
}

// A saturation reason (overflow, flush, Inf) at the level its traced consequence gives: warn when absorbed
// or harmless, unsafe when harmful, its own level when noticeable or untraced.
Verdict by_consequence(Verdict own, const Judgement& j) {
  switch (j.grade) {
    case Judgement::Harmless: return Verdict::Warn;
    case Judgement::Harmful: return Verdict::Unsafe;
    default: return own;
  }
}

// The message with the consequence appended, once per node and consequence (`said` remembers).
std::string with_consequence(std::string message, const Judgement& j, bool& said) {
  if (j.text.empty() || said) return message;
  said = true;
  return message + "; " + j.text;
}

}  // namespace

bool worth_tracing(const probes::FormatFit& fit, int64_t isolated_nonfinite, const report::Thresholds& thresholds) {
  if (fit.overflow > 0 || isolated_nonfinite > 0) return true;
  return fit.significant_flush > 0 && fit.significant_flush_fraction() >= thresholds.underflow_warn_frac;
}

namespace {

// How the report's nodes link: who writes and who reads each value, and the graph outputs a trace may
// reach with whether they are floating (a changed integer output is harm).
struct Links {
  std::unordered_map<std::string, size_t> producer;
  std::unordered_map<std::string, std::vector<size_t>> consumers;
  std::unordered_map<std::string, bool> output_is_float;

  Links(const report::Report& report, const std::vector<std::string>& graph_outputs) {
    for (size_t i = 0; i < report.nodes.size(); ++i) {
      for (const auto& o : report.nodes[i].outputs) producer[o] = i;
      for (const auto& in : report.nodes[i].inputs) consumers[in].push_back(i);
    }
    for (const std::string& out : graph_outputs) {
      auto p = producer.find(out);
      if (p == producer.end()) continue;
      for (const auto& t : report.nodes[p->second].tensors)
        if (t.name == out) output_is_float[out] = t.measured;
    }
  }
};

// The verdicts of one target format: node by node in report order (each node against the figures of the
// values it reads), then the summary.
class TargetEvaluation {
 public:
  TargetEvaluation(report::Report& report, const Links& links, const std::string& fmt)
      : report_(report),
        links_(links),
        fmt_(fmt),
        th_(report.config.thresholds),
        traits_(format_traits(storage_format(*parse_format(fmt)))),
        warn_db_(th_.sqnr_warn_db.count(fmt) ? th_.sqnr_warn_db.at(fmt) : 40),
        unsafe_db_(th_.sqnr_unsafe_db.count(fmt) ? th_.sqnr_unsafe_db.at(fmt) : 20) {
    for (const auto& t : report.inputs) {
      add_tensor(value_figures_[t.name], t, fmt);
      if (t.measured) graph_inputs_[t.name] = &t;
    }
  }

  void run(const std::vector<std::string>& graph_outputs) {
    for (size_t i = 0; i < report_.nodes.size(); ++i) evaluate_node(i);
    rank_culprits();
    advise_keep_fp32();
    summarize_outputs(graph_outputs);
    report_.summary[fmt_] = std::move(summary_);
  }

 private:
  // One node's verdict: each reason from the node's figures and those of the values it reads.
  struct NodeEvaluation {
    NodeEvaluation(const NodeStats& n, const NodeFigures& figures, std::vector<const NodeFigures*> reads)
        : node(n), f(figures), read(std::move(reads)) {}
    const NodeStats& node;
    const NodeFigures& f;
    std::vector<const NodeFigures*> read;  // graph inputs and earlier nodes' outputs (initializers: none)
    report::NodeTarget target;
    bool kept = false;
    std::string boundary;  // for a kept node: " where 'C' reads it in FMT", C its first consumer in the format
    Judgement own;         // what the node's outputs, as the format holds them, do downstream
    bool own_said = false;
    bool inputs_nonfinite = false;  // a value it reads is non-finite in the propagated run

    void add(const char* code, Verdict level, std::string message) {
      target.reasons.push_back({code, level, std::move(message)});
      target.verdict = std::max(target.verdict, level);
    }
    // A kept node is judged only where a consumer computing in the format reads its output converted.
    bool judged_at_outputs() const { return !kept || !boundary.empty(); }
  };

  void evaluate_node(size_t i) {
    NodeStats& node = report_.nodes[i];
    const NodeFigures f = figures_of(node, fmt_);
    NodeEvaluation e(node, f, reads_of(i));
    // A node kept in fp32 computes its own values right; what can still go wrong is its output meeting
    // the format on the way to a consumer that computes in it.
    e.kept = node.targets[fmt_].kept_fp32;
    e.target.kept_fp32 = e.kept;
    e.target.isolated_skipped = node.targets[fmt_].isolated_skipped;
    const std::string reader = first_reader_in_format(node);
    e.boundary = reader.empty() ? "" : " where '" + reader + "' reads it in " + fmt_;
    e.own = judge(f.consequence, warn_db_, unsafe_db_, links_.output_is_float, node.name);
    e.target.consequence = e.own.text;
    if (f.consequence.harm_at != node.name) e.target.harm_at = f.consequence.harm_at;
    for (const NodeFigures* r : e.read) e.inputs_nonfinite |= r->prop_nonfinite > 0;

    saturation_reasons(e);
    graph_input_reasons(e);
    nonfinite_reasons(e);
    const double own_loss_db = precision_reason(e);
    weight_reasons(e);
    note_error_jump(e);

    if (e.target.verdict == Verdict::Unsafe) summary_.unsafe_nodes.push_back(node.name);
    if (e.target.verdict == Verdict::Warn) summary_.warn_nodes.push_back(node.name);
    if (e.target.verdict != Verdict::Safe) {
      const bool broken = e.target.verdict == Verdict::Unsafe && (f.overflow > 0 || f.iso_nan + f.iso_inf > 0);
      // Broken nodes (overflow, NaN/Inf) lead, earliest first: later ones usually carry the first one's values.
      ranking_.emplace_back(broken ? -1e12 + static_cast<double>(i) : -own_loss_db, i);
    }
    node.targets[fmt_] = std::move(e.target);
    for (const auto& t : node.tensors) add_tensor(value_figures_[t.name], t, fmt_);
  }

  // The figures of what node i reads from graph inputs and earlier nodes (initializers have no figures).
  std::vector<const NodeFigures*> reads_of(size_t i) const {
    std::vector<const NodeFigures*> read;
    for (const auto& in : report_.nodes[i].inputs) {
      auto p = links_.producer.find(in);
      auto v = value_figures_.find(in);
      const bool earlier = p == links_.producer.end() ? graph_inputs_.count(in) > 0 : p->second < i;
      if (earlier && v != value_figures_.end()) read.push_back(&v->second);
    }
    return read;
  }

  // For a kept node, its first consumer computing in the format; "" when none (or not kept).
  std::string first_reader_in_format(const NodeStats& node) const {
    if (!node.targets.at(fmt_).kept_fp32) return "";
    for (const auto& out : node.outputs) {
      auto readers = links_.consumers.find(out);
      if (readers == links_.consumers.end()) continue;
      for (size_t c : readers->second)
        if (!report_.nodes[c].targets.at(fmt_).kept_fp32) return report_.nodes[c].name;
    }
    return "";
  }

  // Overflow and flush to zero of the node's outputs, judged by their consequence.
  void saturation_reasons(NodeEvaluation& e) const {
    const NodeFigures& f = e.f;
    if (!e.judged_at_outputs()) return;
    if (f.overflow > 0)
      e.add("overflow", by_consequence(Verdict::Unsafe, e.own),
            with_consequence("reference absmax " + fmt_g(f.absmax) + " exceeds " + fmt_ + " max " +
                                 fmt_g(traits_.max_finite, 6) + " in " + std::to_string(f.overflow) + " of " +
                                 std::to_string(f.values) + " values" + e.boundary,
                             e.own, e.own_said));
    if (f.nonzero == 0) return;
    const double frac = static_cast<double>(f.significant_flushed) / static_cast<double>(f.nonzero);
    if (f.significant_flushed > 0 && frac >= th_.underflow_warn_frac)
      e.add("underflow", by_consequence(frac >= th_.underflow_unsafe_frac ? Verdict::Unsafe : Verdict::Warn, e.own),
            with_consequence(percent(f.significant_flushed, f.nonzero) + " of nonzero reference values (" +
                                 std::to_string(f.significant_flushed) + " of " + std::to_string(f.nonzero) +
                                 ") flush to zero in " + fmt_ + " (|x| <= " + fmt_g(traits_.min_subnormal / 2) +
                                 ") while within " + std::to_string(traits_.mantissa_bits + 1) +
                                 " bits of the tensor's largest value" + e.boundary,
                             e.own, e.own_said));
  }

  // Graph inputs beyond the format: the node reads them converted (a node kept in fp32 reads them as given).
  void graph_input_reasons(NodeEvaluation& e) const {
    if (e.kept) return;
    for (const auto& in : e.node.inputs) {
      auto g = graph_inputs_.find(in);
      if (g == graph_inputs_.end()) continue;
      const report::TensorStats& t = *g->second;
      const probes::FormatFit& fit = t.targets.at(fmt_).fit;
      const Judgement input = judge(t.targets.at(fmt_).consequence, warn_db_, unsafe_db_, links_.output_is_float, "");
      bool input_said = false;
      if (fit.overflow > 0)
        e.add("overflow", by_consequence(Verdict::Unsafe, input),
              with_consequence("graph input '" + in + "' (absmax " + fmt_g(t.range.absmax()) + ") exceeds " + fmt_ +
                                   " max " + fmt_g(traits_.max_finite, 6) + " in " + std::to_string(fit.overflow) +
                                   " of " + std::to_string(t.range.count) + " values, and the node reads it in " +
                                   fmt_,
                               input, input_said));
      const double frac = fit.significant_flush_fraction();
      if (fit.significant_flush > 0 && frac >= th_.underflow_warn_frac)
        e.add("underflow", by_consequence(frac >= th_.underflow_unsafe_frac ? Verdict::Unsafe : Verdict::Warn, input),
              with_consequence("graph input '" + in + "' has " + percent(fit.significant_flush, fit.nonzero) +
                                   " of its nonzero values flushing to zero in " + fmt_ + " while within " +
                                   std::to_string(traits_.mantissa_bits + 1) +
                                   " bits of its largest value, and the node reads it in " + fmt_,
                               input, input_said));
    }
  }

  // Non-finite values the node alone creates, beyond those its inputs already carry once stored in the
  // format (a Reshape of an overflowed tensor passes its Inf on; the Mul that computes 0 * -inf makes NaN).
  // Making NaN is harm wherever it goes; Inf is saturation, judged by its consequence. The roots of a
  // node's NaN are the producers of the non-finite values it reads. Then the non-finite values that first
  // appear in the propagated run here, though the node alone stays finite.
  void nonfinite_reasons(NodeEvaluation& e) const {
    const NodeFigures& f = e.f;
    if (e.kept) return;
    int64_t inherited_nonfinite = 0;
    for (const NodeFigures* r : e.read) inherited_nonfinite += r->stored_nonfinite;
    for (const auto& w : e.node.weights) inherited_nonfinite += w.targets.at(fmt_).overflow;
    if (f.iso_nan + f.iso_inf > inherited_nonfinite) {
      for (const auto& in : e.node.inputs) {
        auto v = value_figures_.find(in);
        if (f.iso_nan == 0 || v == value_figures_.end() || v->second.stored_nonfinite == 0) continue;
        auto p = links_.producer.find(in);
        const std::string root = p == links_.producer.end() ? in : report_.nodes[p->second].name;
        if (std::find(e.target.roots.begin(), e.target.roots.end(), root) == e.target.roots.end())
          e.target.roots.push_back(root);
      }
      std::string from;
      for (const std::string& r : e.target.roots) from += (from.empty() ? " from the non-finite values of '" : "', '") + r;
      e.add("nonfinite", f.iso_nan > 0 ? Verdict::Unsafe : by_consequence(Verdict::Unsafe, e.own),
            with_consequence("the node alone in " + fmt_ + " gives " + std::to_string(f.iso_nan) + " NaN and " +
                                 std::to_string(f.iso_inf) + " Inf where the reference is finite" +
                                 (from.empty() ? "" : from + "' as stored in " + fmt_),
                             e.own, e.own_said));
    }
    if (f.iso_nan + f.iso_inf == 0 && f.prop_nonfinite > 0 && !e.inputs_nonfinite)
      e.add("nonfinite", Verdict::Warn,
            "the propagated " + fmt_ + " run first turns non-finite here (" + std::to_string(f.prop_nonfinite) +
                " values) from errors accumulated upstream");
  }

  // The node's own contribution: how far its isolated SQNR falls below that of its inputs merely stored
  // in the format (graph inputs and initializers count as exact). A node fed already-degraded values
  // (a consumer of subnormals) is not blamed for them. Returns that loss (dB), which ranks culprits.
  double precision_reason(NodeEvaluation& e) const {
    const NodeFigures& f = e.f;
    double input_floor = probes::Divergence::kMaxSqnrDb;
    for (const NodeFigures* r : e.read)
      if (r->measured) input_floor = std::min(input_floor, r->stored_sqnr);
    const double own_loss_db = input_floor - f.iso_sqnr;
    if (!e.kept && f.has_iso && f.iso_sqnr < warn_db_ && own_loss_db >= th_.own_loss_db)
      e.add("precision_loss", f.iso_sqnr < unsafe_db_ ? Verdict::Unsafe : Verdict::Warn,
            "isolated " + fmt_ + " SQNR " + fmt_g(f.iso_sqnr) + " dB (max rel err " + fmt_g(f.iso_max_rel) +
                ") is below the " + fmt_g(f.iso_sqnr < unsafe_db_ ? unsafe_db_ : warn_db_) + " dB limit");
    return own_loss_db;
  }

  // Initializers beyond the format or flushing in it (a kept node reads its weights in fp32).
  void weight_reasons(NodeEvaluation& e) const {
    if (e.kept) return;
    for (const auto& w : e.node.weights) {
      const probes::FormatFit& fit = w.targets.at(fmt_);
      if (fit.overflow > 0)
        e.add("weight_overflow", by_consequence(Verdict::Unsafe, e.own),
              with_consequence("weight '" + w.name + "' has " + std::to_string(fit.overflow) + " of " +
                                   std::to_string(w.count) + " values beyond " + fmt_ + " max " +
                                   fmt_g(traits_.max_finite, 6),
                               e.own, e.own_said));
      const double frac = fit.significant_flush_fraction();
      if (fit.significant_flush > 0 && frac >= th_.weight_underflow_warn_frac)
        e.add("weight_underflow", frac >= th_.weight_underflow_unsafe_frac ? Verdict::Unsafe : Verdict::Warn,
              "weight '" + w.name + "' has " + std::to_string(fit.significant_flush) + " of " +
                  std::to_string(fit.nonzero) + " nonzero values flushing to zero in " + fmt_ + " while within " +
                  std::to_string(traits_.mantissa_bits + 1) + " bits of its largest value");
    }
  }

  // Propagated-error jump: how far the propagated SQNR falls below that of the node's inputs.
  void note_error_jump(NodeEvaluation& e) {
    const NodeFigures& f = e.f;
    double input_level = probes::Divergence::kMaxSqnrDb;
    for (const NodeFigures* r : e.read)
      if (r->measured) input_level = std::min(input_level, r->prop_sqnr);
    e.target.propagated_jump_db = f.measured ? std::max(0.0, input_level - f.prop_sqnr) : 0.0;
    const bool jump = f.measured && ((e.target.propagated_jump_db >= th_.jump_db && f.prop_sqnr < warn_db_) ||
                                     (f.prop_nonfinite > 0 && !e.inputs_nonfinite));
    if (jump && summary_.first_error_jump.empty()) summary_.first_error_jump = e.node.name;
  }

  void rank_culprits() {
    std::stable_sort(ranking_.begin(), ranking_.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (size_t r = 0; r < ranking_.size() && r < 10; ++r)
      summary_.culprits.push_back(report_.nodes[ranking_[r].second].name);
    summary_.first_unsafe = summary_.unsafe_nodes.empty() ? "" : summary_.unsafe_nodes.front();
    summary_.pass = summary_.unsafe_nodes.empty();
  }

  // What to deploy in fp32: the nodes already kept, and the unsafe ones; a node inside a subgraph is kept
  // with its top-level owner (the first main-graph node after it in the report). A kept node that is
  // unsafe is so where a consumer reads its output converted: the consumers computing in the format
  // are kept too, so that the value crosses no conversion that harms it. A passing audit verified its own
  // keep list; a failing one's advice is verified by auditing again with it applied (audit/advice.h),
  // which a report alone cannot do.
  void advise_keep_fp32() {
    const std::vector<NodeStats>& nodes = report_.nodes;
    std::vector<size_t> owner(nodes.size());
    for (size_t i = nodes.size(); i-- > 0;) owner[i] = nodes[i].scope.empty() || i + 1 == nodes.size() ? i : owner[i + 1];
    std::vector<bool> keep(nodes.size(), false);
    for (size_t i = 0; i < nodes.size(); ++i) {
      const report::NodeTarget& t = nodes[i].targets.at(fmt_);
      if (t.kept_fp32 || t.verdict == Verdict::Unsafe) keep[owner[i]] = true;
      if (!t.kept_fp32 || t.verdict != Verdict::Unsafe) continue;
      for (const auto& out : nodes[i].outputs)
        if (auto readers = links_.consumers.find(out); readers != links_.consumers.end())
          for (size_t c : readers->second)
            if (!nodes[c].targets.at(fmt_).kept_fp32) keep[owner[c]] = true;
    }
    for (size_t i = 0; i < nodes.size(); ++i)
      if (keep[i]) summary_.keep_fp32.push_back(nodes[i].name);
    summary_.advice.verified = summary_.pass;
    if (!summary_.pass) summary_.advice.note = "not verified: audit again with --keep-fp32 applied";
  }

  // The graph outputs' errors. NaN/Inf where the reference is finite makes the errors unbounded and cosine
  // and SQNR undefined (null in JSON), which fails every gate on them; so does an output with no element
  // to compare.
  void summarize_outputs(const std::vector<std::string>& graph_outputs) {
    for (const std::string& out : graph_outputs) {
      auto p = links_.producer.find(out);
      if (p == links_.producer.end()) continue;
      for (const auto& t : report_.nodes[p->second].tensors) {
        if (t.name != out || !t.measured) continue;
        const probes::Divergence& d = t.targets.at(fmt_).propagated;
        const double undefined = std::nan("");
        if (d.nonfinite())
          summary_.outputs.push_back({out, INFINITY, INFINITY, undefined, undefined});
        else if (d.compared == 0)
          summary_.outputs.push_back({out, undefined, undefined, undefined, undefined});
        else
          summary_.outputs.push_back({out, d.max_abs, d.max_rel, d.cosine(), d.sqnr_db()});
      }
    }
  }

  report::Report& report_;
  const Links& links_;
  const std::string fmt_;
  const report::Thresholds& th_;
  const FormatTraits& traits_;
  const double warn_db_, unsafe_db_;
  report::TargetSummary summary_;
  // Figures per value, so that a node is compared with the outputs it reads, not its producers' worst.
  std::unordered_map<std::string, NodeFigures> value_figures_;
  std::unordered_map<std::string, const report::TensorStats*> graph_inputs_;
  std::vector<std::pair<double, size_t>> ranking_;  // (isolated score, node) for culprits
};

}  // namespace

void evaluate(report::Report& report, const std::vector<std::string>& graph_outputs) {
  const Links links(report, graph_outputs);
  for (const std::string& fmt : report.config.targets) TargetEvaluation(report, links, fmt).run(graph_outputs);
}

}  // namespace mpa
