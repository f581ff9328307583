// A report as JUnit XML, the format CI systems (Jenkins, GitLab, GitHub test reporters) read: one test
// suite of the gates, one testcase per gate (a failure when the gate failed, its figures the message), and
// one suite per target format with a failing testcase per unsafe node (its first unsafe reason the
// message, every reason in the body). Valid against tests/report/junit.xsd, which describes that format.
#pragma once
#include <string>
#include <vector>

#include "reports/report.h"

namespace mpa::report {

struct GateOutcome {
  std::string expression;
  bool failed = false;
  std::string detail;
};

// `timestamp`: ISO 8601 without a zone ("2026-11-25T04:40:00", UTC), `hostname`: the machine.
std::string junit_xml(const Report& report, const std::vector<GateOutcome>& gates, const std::string& timestamp,
                      const std::string& hostname);

}  // namespace mpa::report
