// Verified keep-fp32 advice. A failing audit's summary lists the nodes to keep in fp32 (the unsafe ones,
// with the consumers of kept nodes whose converted output does harm); here that list is applied and the
// model audited again, growing the list by what is still unsafe, until an audit passes (the advice is
// verified) or no round adds a node or the rounds run out (the summary then says why there is no
// verified advice). The minimal list is `mpaudit fix`'s job; this makes the quick advice right.
#pragma once
#include <functional>
#include <string>
#include <vector>

#include "reports/report.h"

namespace mpa {

// Audits the same model and samples again with `keep_fp32` computed in fp32, in target `format` only.
using AuditWithKept = std::function<report::Report(const std::vector<std::string>& keep_fp32, const std::string& format)>;

inline constexpr int kAdviceRounds = 3;

// Verifies the advice of every failing target of `report` (passing ones verified themselves).
void verify_advice(report::Report& report, const AuditWithKept& audit_with, int max_rounds = kAdviceRounds);

}  // namespace mpa
