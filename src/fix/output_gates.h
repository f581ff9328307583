// What `mpaudit fix` holds a mixed-precision run to: figures of each graph output against the reference
// over every sample, and gates on them. A gate says what must hold, e.g. `max_rel_err<=1e-3`,
// `cosine>=0.9999`, `top1_agree>=0.99`, `output[boxes].mismatch_frac<=0`. Grammar: [output[NAME].]METRIC OP
// NUMBER, OP one of <= < >= > ==; without an output the gate holds for every floating output.
#pragma once
#include <string>
#include <vector>

#include "probes/divergence.h"
#include "tensor/tensor.h"

namespace mpa::fix {

// One graph output of a run against the reference, over every sample.
struct OutputFigures {
  std::string name;
  probes::Divergence divergence;
  // Rows (the last axis of an output of rank >= 1 whose last axis holds >= 2 values, e.g. class scores)
  // whose arg-max agrees with the reference's; NaN rows disagree.
  int64_t rows = 0, rows_agreeing = 0;

  // max_abs_err, max_rel_err, cosine, sqnr_db, mismatch_frac, nonfinite or top1_agree; NaN where there is
  // nothing to measure (no finite reference element, no rows).
  double metric(const std::string& name) const;
  // Adds one sample's reference and run of this output (same shape).
  void add(const Tensor& reference, const Tensor& run, const probes::Divergence::Params& params, int64_t sample);
  // Adds figures of the same output over other samples.
  void merge(const OutputFigures& other);
};

inline constexpr const char* kGateMetrics[] = {"max_abs_err",   "max_rel_err", "cosine",    "sqnr_db",
                                               "mismatch_frac", "nonfinite",   "top1_agree"};

struct OutputGate {
  std::string text;    // as the user wrote it
  std::string output;  // empty: every output
  std::string metric, op;
  double bound = 0;
};

// Fails (mpa::Error) naming the gate on a malformed expression, an unknown metric or an output not in `outputs`.
OutputGate parse_output_gate(const std::string& text, const std::vector<std::string>& outputs);

// The gates used when the user gives none: every output element within the audit's tolerances
// (|run - ref| <= atol + rtol |ref|, as numpy's allclose and the peers' converters check) and no NaN or
// infinity where the reference is finite.
std::vector<std::string> default_output_gates();

struct GateValue {
  std::string gate, output;
  double value = 0;  // NaN: nothing to measure, which holds
  bool held = true;
  // How far a failing value lies beyond the bound, relative to the bound (for a bound of 0, the value's own
  // distance from it); infinite where nothing finite was measured: how narrowly the gate failed.
  double excess = 0;
};

// Each gate on each output it covers, in gate order then output order.
std::vector<GateValue> check_output_gates(const std::vector<OutputGate>& gates,
                                          const std::vector<OutputFigures>& figures);
bool all_held(const std::vector<GateValue>& values);

// Whether the gate's value over every sample can be no better than over some samples completed, for the
// others, by the reference's own outputs (an exact match, the best those could give): max_abs_err,
// max_rel_err, mismatch_frac and nonfinite held below a bound (the worst or the share of bad elements only
// grows, over at most as many elements), sqnr_db and top1_agree held above one (the error energy and the
// disagreeing rows only grow, against the same reference); not cosine, nor `==`.
bool bounded_by_some_samples(const OutputGate& gate);
// Whether such a gate fails on `bounded`, figures so completed: then it fails on every sample, whatever the
// samples not run give, and a run needs no further sample.
bool fails_whatever_the_rest(const std::vector<OutputGate>& gates, const std::vector<OutputFigures>& bounded);

}  // namespace mpa::fix
