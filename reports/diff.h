// What changed between two audit reports, BASE and NEW (`mpaudit diff`): per target format audited in both,
// the verdict, nodes newly unsafe or warned and those cleared, reference values newly beyond the format
// (overflow), a node's own (isolated) SQNR or ulp error moving beyond the thresholds, and the graph
// outputs' SQNR. Nodes are matched by name, tensors by name within their node, so the two reports may come
// from different versions of a model (a PR's): what exists in one only is listed as a note. A change for
// the worse is a regression. Reports of every schema version mpaudit reads (read_report) can be compared.
#pragma once
#include <string>
#include <vector>

#include "reports/report.h"

namespace mpa::report {

struct DiffOptions {
  double sqnr_db = 3;    // a SQNR change at least this large (dB) is listed
  double ulp_ratio = 2;  // a max ulp error that grows or shrinks by this factor (and is at least 1 ulp) is listed
};

struct Change {
  std::string target;   // format
  std::string kind;     // verdict | unsafe | warn | overflow | sqnr | ulp | output
  std::string subject;  // node (with its op) or output
  std::string detail;   // the figures, before -> after
  bool regression = false;
};

struct Diff {
  std::string base_path, new_path;
  std::vector<std::string> notes;  // model identity, nodes and targets in one report only
  std::vector<Change> changes;     // per target, in report order
  int64_t regressions() const;
  int64_t improvements() const;
};

Diff diff(const Report& base, const Report& now, const DiffOptions& options = {});
// Plain text for a terminal or log, and Markdown for a pull-request comment.
std::string diff_text(const Diff& diff);
std::string diff_markdown(const Diff& diff);

}  // namespace mpa::report
