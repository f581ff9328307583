// Progress of a long audit or merge on stderr: a bar redrawn in place on a terminal; on a pipe or a CI
// log, a plain line every `line_period` seconds (none at all for work that ends sooner, so short runs stay
// quiet), and a last one at the end when any was printed.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace mpa::cli {

class Progress {
 public:
  static constexpr double kLinePeriod = 10;  // default seconds between plain lines

  // `what` names the work in plain lines ("audit", "merge"), `unit` its steps ("node runs", "reports").
  Progress(bool enabled, std::string what, std::string unit, double line_period = kLinePeriod);
  void show(int64_t done, int64_t total);

 private:
  using clock = std::chrono::steady_clock;
  bool enabled_, terminal_;
  std::string what_, unit_;
  clock::time_point start_;
  double line_period_, next_line_;
  bool printed_ = false;
};

}  // namespace mpa::cli
