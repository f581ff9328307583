#include "probes/range_probe.h"

namespace mpa::probes {

// Chunks (double sums) and whole probes (exact sums) carry the same fields; ExactSum::add takes both.
template <class Counts> void RangeProbe::add_counts(const Counts& o) {
  count += o.count;
  finite += o.finite;
  zeros += o.zeros;
  nan += o.nan;
  pos_inf += o.pos_inf;
  neg_inf += o.neg_inf;
  min = std::min(min, o.min);
  max = std::max(max, o.max);
  sum.add(o.sum);
  sum_sq.add(o.sum_sq);
}

void RangeProbe::absorb(const Chunk& c) { add_counts(c); }

void RangeProbe::merge(const RangeProbe& o) { add_counts(o); }

double RangeProbe::mean() const { return finite ? sum.value() / static_cast<double>(finite) : std::nan(""); }

double RangeProbe::std_dev() const {
  if (!finite) return std::nan("");
  const double m = mean();
  // Squares beyond the double range make the variance Inf - Inf: undefined (null), never a silent 0.
  const double variance = sum_sq.value() / static_cast<double>(finite) - m * m;
  return std::isnan(variance) ? variance : std::sqrt(std::max(0.0, variance));
}

json RangeProbe::to_json() const {
  json j;
  j["count"] = count;
  j["min"] = number_or_null(min);
  j["max"] = number_or_null(max);
  j["absmax"] = absmax();
  j["mean"] = number_or_null(mean());
  j["std"] = number_or_null(std_dev());
  j["zeros"] = zeros;
  j["nan"] = nan;
  j["pos_inf"] = pos_inf;
  j["neg_inf"] = neg_inf;
  j["state"] = {{"finite", finite}, {"sum", sum.to_string()}, {"sum_sq", sum_sq.to_string()}};
  return j;
}

RangeProbe RangeProbe::from_json(const json& j) {
  RangeProbe r;
  r.count = j.at("count");
  r.min = j.at("min").is_null() ? INFINITY : j.at("min").get<double>();
  r.max = j.at("max").is_null() ? -INFINITY : j.at("max").get<double>();
  r.zeros = j.at("zeros");
  r.nan = j.at("nan");
  r.pos_inf = j.at("pos_inf");
  r.neg_inf = j.at("neg_inf");
  const json& s = j.at("state");
  r.finite = s.at("finite");
  r.sum = ExactSum::parse(s.at("sum"));
  r.sum_sq = ExactSum::parse(s.at("sum_sq"));
  return r;
}

}  // namespace mpa::probes
