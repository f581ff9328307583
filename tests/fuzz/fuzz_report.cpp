// Reports as `merge` reads them (validated against the schema), and, when the input holds two reports separated
// by a NUL byte (which JSON text cannot contain), the second merged into the first, re-evaluated and
// serialized as `merge` writes it.
#include "audit/verdict.h"
#include "reports/report.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input = mpa::fuzz::as_string(data, size);
  const size_t nul = input.find('\0');
  mpa::fuzz::refusing_bad_input([&] {
    mpa::report::Report merged = mpa::report::parse_report(input.substr(0, nul), "a.json", true);
    if (nul == std::string::npos) return;
    const mpa::report::Report next = mpa::report::parse_report(input.substr(nul + 1), "b.json", true);
    std::vector<std::string> outputs = mpa::report::graph_outputs(merged);
    if (outputs.empty()) outputs = mpa::report::graph_outputs(next);
    merged.merge(next);
    mpa::evaluate(merged, outputs);
    mpa::report::serialize(merged);
  });
  return 0;
}
