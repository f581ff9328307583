#include "fix/output_gates.h"

#include <algorithm>
#include <cmath>
#include <regex>

#include "common/error.h"
#include "common/number_text.h"

namespace mpa::fix {

namespace {

// Index of the largest value of a row; -1 when the row holds NaN (it agrees with nothing).
int64_t argmax_of(const double* row, int64_t n) {
  int64_t best = 0;
  for (int64_t i = 0; i < n; ++i) {
    if (std::isnan(row[i])) return -1;
    if (row[i] > row[best]) best = i;
  }
  return best;
}

bool holds(double value, const std::string& op, double bound) {
  if (op == "<=") return value <= bound;
  if (op == "<") return value < bound;
  if (op == ">=") return value >= bound;
  if (op == ">") return value > bound;
  return value == bound;
}

}  // namespace

void OutputFigures::add(const Tensor& reference, const Tensor& run, const probes::Divergence::Params& params,
                        int64_t sample) {
  require(reference.shape() == run.shape(), "output '" + name + "': the run's shape " + shape_str(run.shape()) +
                                                " differs from the reference's " + shape_str(reference.shape()));
  divergence.merge(probes::Divergence::of(reference, run, params, sample));
  const int64_t width = reference.rank() >= 1 ? reference.shape().back() : 0;
  if (width < 2) return;
  const std::vector<double> want = reference.to_double_vector(), got = run.to_double_vector();
  for (size_t r = 0; r < want.size(); r += static_cast<size_t>(width)) {
    const int64_t best = argmax_of(want.data() + r, width);
    rows += 1;
    rows_agreeing += best >= 0 && best == argmax_of(got.data() + r, width);
  }
}

void OutputFigures::merge(const OutputFigures& other) {
  divergence.merge(other.divergence);
  rows += other.rows;
  rows_agreeing += other.rows_agreeing;
}

double OutputFigures::metric(const std::string& m) const {
  const probes::Divergence& d = divergence;
  if (m == "nonfinite") return static_cast<double>(d.nonfinite());
  if (m == "top1_agree") return rows ? static_cast<double>(rows_agreeing) / static_cast<double>(rows) : std::nan("");
  if (d.compared == 0) return std::nan("");
  if (m == "max_abs_err") return d.max_abs;
  if (m == "max_rel_err") return d.max_rel;
  if (m == "cosine") return d.cosine();
  if (m == "sqnr_db") return d.sqnr_db();
  if (m == "mismatch_frac") return d.mismatch_frac();
  fail("unknown output metric '" + m + "'");
}

OutputGate parse_output_gate(const std::string& text, const std::vector<std::string>& outputs) {
  static const std::regex grammar(std::string(R"(^\s*(?:output\[([^\]]+)\]\.)?([a-z0-9_]+)\s*()") + ">=|<=|==|>|<" +
                                  R"()\s*(\S+)\s*$)");
  std::smatch m;
  if (!std::regex_match(text, m, grammar))
    fail("--gate '" + text +
         "': expected [output[NAME].]METRIC OP NUMBER, e.g. 'max_rel_err<=1e-3' or 'cosine>=0.9999'");
  OutputGate gate{text, m[1].str(), m[2].str(), m[3].str(), 0};
  if (std::find_if(std::begin(kGateMetrics), std::end(kGateMetrics), [&](const char* k) { return gate.metric == k; }) ==
      std::end(kGateMetrics))
    fail("--gate '" + text + "': unknown metric '" + gate.metric +
         "' (max_abs_err, max_rel_err, cosine, sqnr_db, mismatch_frac, nonfinite, top1_agree)");
  if (!gate.output.empty() && std::find(outputs.begin(), outputs.end(), gate.output) == outputs.end())
    fail("--gate '" + text + "': the model has no floating output '" + gate.output + "'");
  const std::optional<double> bound = parse_finite_number(m[4].str());
  if (!(bound.has_value())) fail("--gate '" + text + "': bad number '" + m[4].str() + "'");
  gate.bound = *bound;
  return gate;
}

std::vector<std::string> default_output_gates() { return {"mismatch_frac<=0", "nonfinite<=0"}; }

namespace {

GateValue judge(const OutputGate& gate, const OutputFigures& f) {
  GateValue v{gate.text, f.name, f.metric(gate.metric), true};
  // Nothing to measure holds (no finite reference value, no rows); a run whose every value went
  // non-finite has nothing to measure either, but its `nonfinite` says so and the error figures fail.
  if (std::isnan(v.value))
    v.held = gate.metric == "top1_agree" || f.divergence.ref_finite == 0;
  else
    v.held = holds(v.value, gate.op, gate.bound);
  if (!v.held)
    v.excess = !std::isfinite(v.value) ? INFINITY
               : gate.bound != 0       ? std::fabs(v.value - gate.bound) / std::fabs(gate.bound)
                                       : std::fabs(v.value);
  return v;
}

bool covers(const OutputGate& gate, const OutputFigures& f) { return gate.output.empty() || gate.output == f.name; }

}  // namespace

std::vector<GateValue> check_output_gates(const std::vector<OutputGate>& gates,
                                          const std::vector<OutputFigures>& figures) {
  std::vector<GateValue> values;
  for (const OutputGate& gate : gates)
    for (const OutputFigures& f : figures)
      if (covers(gate, f)) values.push_back(judge(gate, f));
  return values;
}

bool bounded_by_some_samples(const OutputGate& g) {
  const bool at_most = g.op == "<=" || g.op == "<", at_least = g.op == ">=" || g.op == ">";
  if (g.metric == "sqnr_db" || g.metric == "top1_agree") return at_least;
  return at_most && g.metric != "cosine";
}

bool fails_whatever_the_rest(const std::vector<OutputGate>& gates, const std::vector<OutputFigures>& bounded) {
  for (const OutputGate& gate : gates)
    if (bounded_by_some_samples(gate))
      for (const OutputFigures& f : bounded)
        if (covers(gate, f) && !judge(gate, f).held) return true;
  return false;
}

bool all_held(const std::vector<GateValue>& values) {
  return std::all_of(values.begin(), values.end(), [](const GateValue& v) { return v.held; });
}

}  // namespace mpa::fix
