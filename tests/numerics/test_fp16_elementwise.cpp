// Elementwise ops at storage FP16 against numpy's float16 results (tests/oracles/fp16_elementwise.py, whose
// docstring defines the cases and the output format). Arithmetic, comparisons, selection and Cast must
// match bit for bit; transcendental functions within 1 fp16 ulp (numpy's side is correctly rounded from
// float64, ours is float libm then one rounding). NaN must meet NaN (payloads are not modelled), ±Inf exactly.
// MPA_PYTHON and MPA_ORACLE_DIR come from tests/CMakeLists.txt.
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <sstream>

#include "numerics/one_node.h"

using namespace mpa;
using namespace mpa::test;

namespace {

struct OracleCase {
  std::string name, op;
  bool exact = true;
  std::vector<std::pair<std::string, std::string>> attributes;
  std::vector<Tensor> inputs;
  std::vector<uint16_t> expected;  // fp16 bits
};

std::string run_oracle() {
  const std::string command = std::string(MPA_PYTHON) + " " + MPA_ORACLE_DIR + "/fp16_elementwise.py";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) return {};
  std::string text;
  char buffer[1 << 16];
  size_t got;
  while ((got = fread(buffer, 1, sizeof buffer, pipe)) > 0) text.append(buffer, got);
  return pclose(pipe) == 0 ? text : std::string();
}

std::vector<OracleCase> parse_cases(const std::string& text) {
  std::vector<OracleCase> cases;
  std::istringstream lines(text);
  std::string line;
  while (std::getline(lines, line)) {
    std::istringstream words(line);
    std::string kind;
    words >> kind;
    if (kind == "case") {
      OracleCase c;
      std::string tolerance, attribute;
      words >> c.name >> c.op >> tolerance;
      c.exact = tolerance == "exact";
      while (words >> attribute) {
        const size_t eq = attribute.find('=');
        c.attributes.emplace_back(attribute.substr(0, eq), attribute.substr(eq + 1));
      }
      cases.push_back(std::move(c));
    } else if (kind == "input") {
      std::string type;
      int64_t count;
      words >> type >> count;
      Tensor t(type == "bool" ? DType::Bool : DType::Float32, {count});
      for (int64_t i = 0; i < count; ++i) {
        std::string word;
        words >> word;
        if (type == "bool") t.data<bool>()[i] = word == "1";
        else t.data<float>()[i] = bits_float(static_cast<uint32_t>(std::stoul(word, nullptr, 16)));
      }
      cases.back().inputs.push_back(std::move(t));
    } else if (kind == "output") {
      int64_t count;
      words >> count;
      for (int64_t i = 0; i < count; ++i) {
        std::string word;
        words >> word;
        cases.back().expected.push_back(static_cast<uint16_t>(std::stoul(word, nullptr, 16)));
      }
    }
  }
  return cases;
}

bool is_nan16(uint16_t h) { return (h & 0x7C00u) == 0x7C00u && (h & 0x3FFu) != 0; }
bool is_inf16(uint16_t h) { return (h & 0x7FFFu) == 0x7C00u; }
// fp16 codes in value order: distance 1 = neighbouring values (±0 are both 0).
int ordered16(uint16_t h) { return (h & 0x8000u) ? -int(h & 0x7FFFu) : int(h); }

// Why got is not acceptable for expected, or "" when it is.
std::string mismatch(uint16_t got, uint16_t expected, bool exact, int ulps) {
  if (is_nan16(expected) || is_nan16(got)) return is_nan16(expected) && is_nan16(got) ? "" : "NaN differs";
  if (exact || is_inf16(expected) || is_inf16(got)) return got == expected ? "" : "bits differ";
  return std::abs(ordered16(got) - ordered16(expected)) <= ulps ? "" : "more than " + std::to_string(ulps) + " ulp apart";
}

// Gelu below x = -4: 1 + erf(x/√2) cancels in float, so the tiny result carries erf's float error (a
// vectorised erf's ulp or two, numpy's correctly rounded one) magnified; docs/numerics.md.
int allowed_ulps(const std::string& op, const std::vector<Tensor>& inputs, int64_t i) {
  return op == "Gelu" && inputs[0].data<float>()[i] < -4 ? 4 : 1;
}

OneNode node_for(const OracleCase& c) {
  const bool cast = c.op == "Cast";
  std::vector<std::string> names;
  for (size_t i = 0; i < c.inputs.size(); ++i) names.push_back(std::string(1, 'x') += std::to_string(i));
  OneNode node(c.op, names, 20, cast ? onnx::TensorProto::FLOAT16 : onnx::TensorProto::FLOAT);
  for (const auto& [key, value] : c.attributes) {
    if (!value.empty() && std::isdigit(static_cast<unsigned char>(value[0]))) node.attribute(key, int64_t{std::stoll(value)});
    else node.attribute(key, value);
  }
  return node;
}

uint16_t output_bits(const Tensor& y, int64_t i) {
  if (y.dtype() == DType::Float16) return y.data<Float16>()[i].bits;
  return float_to_half(y.data<float>()[i]);  // on the fp16 grid already: exact
}

}  // namespace

TEST(Fp16Elementwise, MatchesNumpyFloat16) {
  const std::vector<OracleCase> cases = parse_cases(run_oracle());
  ASSERT_GE(cases.size(), 20u) << "the oracle did not run: " << MPA_PYTHON;
  for (const OracleCase& c : cases) {
    SCOPED_TRACE(c.name);
    const Tensor y = node_for(c).run(c.inputs, fp16_options());
    ASSERT_EQ(y.numel(), static_cast<int64_t>(c.expected.size()));
    int failures = 0;
    for (int64_t i = 0; i < y.numel(); ++i) {
      const uint16_t got = output_bits(y, i), expected = c.expected[size_t(i)];
      const std::string why = mismatch(got, expected, c.exact, allowed_ulps(c.op, c.inputs, i));
      if (why.empty()) continue;
      if (++failures > 5) continue;
      std::ostringstream inputs;
      for (const Tensor& in : c.inputs)
        inputs << (in.dtype() == DType::Bool ? float(in.data<bool>()[i]) : in.data<float>()[i]) << " ";
      ADD_FAILURE() << c.op << "(" << inputs.str() << "): got 0x" << std::hex << got << " (" << half_to_float(got)
                    << "), numpy 0x" << expected << " (" << half_to_float(expected) << "): " << why;
    }
    EXPECT_EQ(failures, 0) << c.name << ": mismatches in total";
  }
}
