// Proofs for src/tensor/formats.h over every float32 bit pattern (2^32 inputs), and for FP8 against
// ONNX's reference implementation and its backend test data. Label "exhaustive": too slow for the
// sanitizer build. MPA_PYTHON, MPA_ORACLE_DIR and MPA_ONNX_NODE_TESTS come from tests/CMakeLists.txt.
#include <gtest/gtest.h>
#include <onnx/onnx_pb.h>

#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tensor/formats.h"

using namespace mpa;

namespace {

constexpr uint64_t kFloatPatterns = 1ull << 32;
constexpr uint32_t kBlock = 1u << 16;  // floats per pass step: fits L2 with all buffers
constexpr int kMaxReportedMismatches = 10;

bool is_nan_bits(uint32_t bits) { return (bits & 0x7FFFFFFFu) > 0x7F800000u; }
uint32_t biased_exponent(uint32_t bits) { return (bits >> 23) & 0xFFu; }

// Paths with their own compiled code for the conversion at hand. FP16 runs the same F16C kernel on Avx2
// and Avx512, so checking it once is enough; the other conversions are compiled once per path.
std::vector<ConversionPath> vector_paths(bool fp16) {
  std::vector<ConversionPath> paths;
  for (ConversionPath p : {ConversionPath::Avx2, ConversionPath::Avx512})
    if (p <= best_conversion_path() && !(fp16 && p == ConversionPath::Avx512)) paths.push_back(p);
  return paths;
}

// Calls visit(first_bits, floats, n) for consecutive blocks covering all 2^32 bit patterns in order.
template <class Visit>
void for_every_float(Visit visit) {
  std::vector<float> floats(kBlock);
  for (uint64_t first = 0; first < kFloatPatterns; first += kBlock) {
    for (uint32_t i = 0; i < kBlock; ++i) floats[i] = bits_float(static_cast<uint32_t>(first) + i);
    visit(static_cast<uint32_t>(first), floats.data(), kBlock);
  }
}

uint64_t bit_pattern(uint16_t v) { return v; }
uint64_t bit_pattern(float v) { return float_bits(v); }

// Counts mismatches and reports the first few with the input that caused them.
class MismatchLog {
 public:
  explicit MismatchLog(std::string what) : what_(std::move(what)) {}
  void check(bool equal, uint32_t input_bits, uint64_t got, uint64_t expected) {
    if (equal) return;
    if (++count_ <= kMaxReportedMismatches)
      ADD_FAILURE() << what_ << ": input 0x" << std::hex << input_bits << " gave 0x" << got << ", expected 0x"
                    << expected;
  }
  // Element-wise comparison of got[] with expected[] for inputs first .. first + n - 1; a memcmp first,
  // since the arrays are nearly always equal and the per-element loop costs seconds over 2^32 inputs.
  template <class T>
  void check_arrays(uint32_t first, const T* got, const T* expected, uint32_t n) {
    if (memcmp(got, expected, n * sizeof(T)) == 0) return;
    for (uint32_t i = 0; i < n; ++i)
      check(bit_pattern(got[i]) == bit_pattern(expected[i]), first + i, bit_pattern(got[i]), bit_pattern(expected[i]));
  }
  ~MismatchLog() { EXPECT_EQ(count_, 0u) << what_ << ": mismatches in total"; }

 private:
  std::string what_;
  uint64_t count_ = 0;
};

// A Python oracle started before the C++ pass so the two run side by side; output() waits for it.
class OracleProcess {
 public:
  explicit OracleProcess(const std::string& script) {
    const std::string command = std::string(MPA_PYTHON) + " " + MPA_ORACLE_DIR + "/" + script;
    pipe_ = popen(command.c_str(), "r");
  }
  ~OracleProcess() {
    if (pipe_) pclose(pipe_);
  }
  // All of stdout; empty (with a test failure) when the script could not run or exited non-zero.
  std::string output() {
    if (!pipe_) {
      ADD_FAILURE() << "could not start the oracle";
      return {};
    }
    std::string text;
    char buffer[1 << 16];
    size_t got;
    while ((got = fread(buffer, 1, sizeof buffer, pipe_)) > 0) text.append(buffer, got);
    const int status = pclose(pipe_);
    pipe_ = nullptr;
    if (status != 0) {
      ADD_FAILURE() << "oracle exited with status " << status;
      return {};
    }
    return text;
  }

 private:
  FILE* pipe_ = nullptr;
};

// The digest tests/oracles/fp16_digest.py computes over numpy's casts (its docstring defines it): a
// weighted sum per binade of 2^23 inputs, folded FNV-style in input order. NaN inputs count as 0x7E00.
class Fp16Digest {
 public:
  // Halves for inputs first .. first + n - 1; blocks must arrive in order and not straddle a binade.
  void add(uint32_t first, const uint16_t* halves, uint32_t n) {
    const bool nan_binade = biased_exponent(first) == 0xFF;  // offset 0 is ±Inf, all others NaN
    uint64_t word_index = (first & (kBinadeFloats - 1)) / 4;
    for (uint32_t i = 0; i < n; i += 4, ++word_index) {
      uint64_t word;
      memcpy(&word, halves + i, sizeof word);  // little-endian: halves[i] in the low 16 bits
      if (nan_binade) {
        for (uint32_t lane = 0; lane < 4; ++lane) {
          if (!is_nan_bits(first + i + lane)) continue;
          word = (word & ~(0xFFFFull << (16 * lane))) | (static_cast<uint64_t>(kCanonicalNan) << (16 * lane));
        }
      }
      binade_sum_ += word * weight(word_index);
    }
    if (((first + n) & (kBinadeFloats - 1)) == 0) {
      digest_ = digest_ * 0x100000001B3ull + binade_sum_;
      binade_sum_ = 0;
    }
  }
  std::string hex() const {
    char text[17];
    snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(digest_));
    return text;
  }

 private:
  static constexpr uint32_t kBinadeFloats = 1u << 23;
  static constexpr uint16_t kCanonicalNan = 0x7E00;
  static uint64_t weight(uint64_t index) {  // splitmix64 output number index + 1, made odd
    uint64_t z = (index + 1) * 0x9E3779B97F4A7C15ull;
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return (z ^ (z >> 31)) | 1u;
  }
  uint64_t digest_ = 0xCBF29CE484222325ull;
  uint64_t binade_sum_ = 0;
};

// Written differently from float_to_bfloat16 on purpose: compare the dropped half with the halfway point.
uint32_t reference_round_even(uint32_t bits, uint32_t dropped_bits) {
  const uint32_t kept = bits >> dropped_bits;
  const uint32_t dropped = bits & ((1u << dropped_bits) - 1u);
  const uint32_t halfway = 1u << (dropped_bits - 1u);
  const bool up = dropped > halfway || (dropped == halfway && (kept % 2 == 1));
  return (kept + (up ? 1u : 0u)) << dropped_bits;  // an overflow carries into the exponent, up to Inf
}
uint16_t reference_bfloat16(uint32_t bits) {
  if (is_nan_bits(bits)) return static_cast<uint16_t>((bits >> 16) | 0x0040u);  // quiet, payload truncated
  return static_cast<uint16_t>(reference_round_even(bits, 16) >> 16);
}
uint32_t reference_tf32(uint32_t bits) {
  if (is_nan_bits(bits)) return (bits | 0x00400000u) & 0xFFFFE000u;
  return reference_round_even(bits, 13);
}

}  // namespace

TEST(FormatsExhaustive, Fp16EveryFloatVectorEqualsScalarAndNumpy) {
  OracleProcess numpy_digest("fp16_digest.py");
  const std::vector<ConversionPath> paths = vector_paths(true);
  MismatchLog vector_log("floats_to_half vector vs scalar"), round_log("round_to_format(FP16) vector vs scalar"),
      generic_log("NarrowFloat<5,10> vs float_to_half");
  Fp16Digest digest;
  std::vector<uint16_t> scalar(kBlock), vectorised(kBlock);
  std::vector<float> expected_rounded(kBlock), rounded(kBlock);
  for_every_float([&](uint32_t first, const float* floats, uint32_t n) {
    floats_to_half(floats, scalar.data(), n, ConversionPath::Scalar);
    for (uint32_t i = 0; i < n; ++i) expected_rounded[i] = half_to_float(scalar[i]);
    for (ConversionPath path : paths) {
      floats_to_half(floats, vectorised.data(), n, path);
      vector_log.check_arrays(first, vectorised.data(), scalar.data(), n);
      std::copy(floats, floats + n, rounded.begin());
      round_to_format(Format::FP16, rounded.data(), n, path);
      round_log.check_arrays(first, rounded.data(), expected_rounded.data(), n);
    }
    // The FP8 algorithm with FP16's parameters must reproduce float_to_half (NaN payloads aside), checked
    // on every float from 2^-26 to 2^17, where all of FP16's rounding happens; outside it the results
    // are the constants ±0 and ±Inf, checked at the ends of each block.
    const uint32_t exponent = biased_exponent(first);
    const bool rounding_range = exponent >= 127 - 26 && exponent < 127 + 17;
    for (uint32_t i = 0; i < n; i = (rounding_range || i + 1 == n) ? i + 1 : n - 1) {
      if (is_nan_bits(first + i)) continue;
      const uint32_t generic = detail::NarrowFloat<5, 10, detail::NarrowSpecials::Ieee>::from_float(floats[i], false);
      generic_log.check(generic == scalar[i], first + i, generic, scalar[i]);
    }
    digest.add(first, scalar.data(), n);
  });
  std::string expected = numpy_digest.output();
  if (!expected.empty() && expected.back() == '\n') expected.pop_back();
  EXPECT_EQ(digest.hex(), expected) << "fp16 digest differs from numpy's (tests/oracles/fp16_digest.py)";
}

TEST(FormatsExhaustive, Bf16AndTf32EveryFloatVectorEqualsScalarAndReference) {
  const std::vector<ConversionPath> paths = vector_paths(false);
  MismatchLog scalar_log("float_to_bfloat16 vs reference RNE"), vector_log("floats_to_bfloat16 vector vs scalar"),
      round_log("round_to_format(BF16) vector vs scalar"), generic_log("NarrowFloat<8,7> vs float_to_bfloat16"),
      tf32_log("round_to_tf32 vs reference RNE"), tf32_vector_log("round_to_format(TF32) vector vs scalar");
  std::vector<uint16_t> scalar(kBlock), reference(kBlock), vectorised(kBlock);
  std::vector<float> expected_rounded(kBlock), reference_tf32_values(kBlock), tf32_scalar(kBlock), rounded(kBlock);
  for_every_float([&](uint32_t first, const float* floats, uint32_t n) {
    floats_to_bfloat16(floats, scalar.data(), n, ConversionPath::Scalar);
    for (uint32_t i = 0; i < n; ++i) {
      reference[i] = reference_bfloat16(first + i);
      expected_rounded[i] = bfloat16_to_float(scalar[i]);
      reference_tf32_values[i] = bits_float(reference_tf32(first + i));
      tf32_scalar[i] = round_to_tf32(floats[i]);
    }
    scalar_log.check_arrays(first, scalar.data(), reference.data(), n);
    tf32_log.check_arrays(first, tf32_scalar.data(), reference_tf32_values.data(), n);
    // The FP8 algorithm with BF16's parameters, on a prime stride (BF16 rounds across all of float's range).
    for (uint32_t i = first % 61 == 0 ? 0 : 61 - first % 61; i < n; i += 61) {
      if (is_nan_bits(first + i)) continue;
      const uint32_t generic = detail::NarrowFloat<8, 7, detail::NarrowSpecials::Ieee>::from_float(floats[i], false);
      generic_log.check(generic == scalar[i], first + i, generic, scalar[i]);
    }
    for (ConversionPath path : paths) {
      floats_to_bfloat16(floats, vectorised.data(), n, path);
      vector_log.check_arrays(first, vectorised.data(), scalar.data(), n);
      std::copy(floats, floats + n, rounded.begin());
      round_to_format(Format::BF16, rounded.data(), n, path);
      round_log.check_arrays(first, rounded.data(), expected_rounded.data(), n);
      std::copy(floats, floats + n, rounded.begin());
      round_to_format(Format::TF32, rounded.data(), n, path);
      tf32_vector_log.check_arrays(first, rounded.data(), tf32_scalar.data(), n);
    }
  });
}

TEST(FormatsExhaustive, EveryHalfAndBfloat16DecodesIdenticallyOnEveryPath) {
  std::vector<uint16_t> codes(1 << 16);
  for (uint32_t c = 0; c < codes.size(); ++c) codes[c] = static_cast<uint16_t>(c);
  const int64_t n = static_cast<int64_t>(codes.size());
  std::vector<float> scalar_half(n), scalar_bf16(n), vector_half(n), vector_bf16(n);
  halves_to_float(codes.data(), scalar_half.data(), n, ConversionPath::Scalar);
  bfloat16s_to_float(codes.data(), scalar_bf16.data(), n, ConversionPath::Scalar);
  for (ConversionPath path : vector_paths(false)) {
    halves_to_float(codes.data(), vector_half.data(), n, path);
    bfloat16s_to_float(codes.data(), vector_bf16.data(), n, path);
    for (int64_t c = 0; c < n; ++c) {
      EXPECT_EQ(float_bits(vector_half[c]), float_bits(scalar_half[c])) << std::hex << c;
      EXPECT_EQ(float_bits(vector_bf16[c]), float_bits(scalar_bf16[c])) << std::hex << c;
    }
  }
}

TEST(FormatsExhaustive, Fp8MatchesOnnxReferenceImplementation) {
  OracleProcess onnx_reference("fp8_table.py");
  const std::string table = onnx_reference.output();
  ASSERT_GE(table.size(), 2 * 256 * sizeof(float) + sizeof(uint32_t));
  const char* cursor = table.data();
  auto take = [&](void* destination, size_t bytes) {
    memcpy(destination, cursor, bytes);
    cursor += bytes;
  };
  float e4m3_decoded[256], e5m2_decoded[256];
  take(e4m3_decoded, sizeof e4m3_decoded);
  take(e5m2_decoded, sizeof e5m2_decoded);
  for (uint32_t code = 0; code < 256; ++code) {
    const uint8_t c = static_cast<uint8_t>(code);
    // NaN codes decode to some NaN; every other code to exactly the reference's float.
    const auto same_value = [](float ours, float reference) {
      return std::isnan(reference) ? std::isnan(ours) : float_bits(ours) == float_bits(reference);
    };
    EXPECT_TRUE(same_value(fp8_e4m3fn_to_float(c), e4m3_decoded[code])) << "E4M3FN code " << code;
    EXPECT_TRUE(same_value(fp8_e5m2_to_float(c), e5m2_decoded[code])) << "E5M2 code " << code;
  }
  uint32_t n = 0;
  take(&n, sizeof n);
  ASSERT_EQ(table.size(), 2 * 256 * sizeof(float) + sizeof(uint32_t) + n * (sizeof(uint32_t) + 4));
  std::vector<uint32_t> inputs(n);
  take(inputs.data(), n * sizeof(uint32_t));
  struct Target {
    const char* name;
    Format format;
    bool saturate;
  };
  const Target targets[] = {{"E4M3FN saturate", Format::FP8E4M3FN, true},
                            {"E4M3FN no saturate", Format::FP8E4M3FN, false},
                            {"E5M2 saturate", Format::FP8E5M2, true},
                            {"E5M2 no saturate", Format::FP8E5M2, false}};
  std::vector<float> floats(n);
  for (uint32_t i = 0; i < n; ++i) floats[i] = bits_float(inputs[i]);
  for (const Target& target : targets) {
    const uint8_t* expected = reinterpret_cast<const uint8_t*>(cursor);
    cursor += n;
    const bool e4m3 = target.format == Format::FP8E4M3FN;
    auto encode = [&](float v) {
      return e4m3 ? float_to_fp8_e4m3fn(v, target.saturate) : float_to_fp8_e5m2(v, target.saturate);
    };
    auto decode = [&](uint8_t c) { return e4m3 ? fp8_e4m3fn_to_float(c) : fp8_e5m2_to_float(c); };
    MismatchLog log(std::string("fp8 ") + target.name + " vs onnx.reference");
    for (uint32_t i = 0; i < n; ++i) {
      const uint8_t code = encode(floats[i]);
      // NaN encodings: ONNX's reference keeps the sign except for negative signalling NaNs (an ml_dtypes
      // quirk); a NaN only has to stay a NaN.
      const bool equal =
          is_nan_bits(inputs[i]) ? std::isnan(decode(code)) && std::isnan(decode(expected[i])) : code == expected[i];
      log.check(equal, inputs[i], code, expected[i]);
    }
    for (ConversionPath path : {ConversionPath::Scalar, ConversionPath::Avx2, ConversionPath::Avx512}) {
      std::vector<float> rounded = floats;
      round_to_format(target.format, rounded.data(), n, path, target.saturate);
      MismatchLog round_log(std::string("round_to_format ") + target.name + " " +
                            std::string(conversion_path_name(path)));
      for (uint32_t i = 0; i < n; ++i) {
        const uint32_t scalar = float_bits(round_to_format(target.format, floats[i], target.saturate));
        round_log.check(float_bits(rounded[i]) == scalar, inputs[i], float_bits(rounded[i]), scalar);
      }
    }
  }
}

namespace {

std::string read_file(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Element i of a float or float16 TensorProto, as float (float16 widens exactly).
std::vector<float> tensor_floats(const onnx::TensorProto& tensor) {
  std::vector<float> values;
  if (tensor.data_type() == onnx::TensorProto::FLOAT) {
    if (!tensor.raw_data().empty()) {
      values.resize(tensor.raw_data().size() / sizeof(float));
      memcpy(values.data(), tensor.raw_data().data(), values.size() * sizeof(float));
    } else {
      values.assign(tensor.float_data().begin(), tensor.float_data().end());
    }
  } else if (tensor.data_type() == onnx::TensorProto::FLOAT16) {
    std::vector<uint16_t> halves;
    if (!tensor.raw_data().empty()) {
      halves.resize(tensor.raw_data().size() / sizeof(uint16_t));
      memcpy(halves.data(), tensor.raw_data().data(), halves.size() * sizeof(uint16_t));
    } else {
      for (int32_t h : tensor.int32_data()) halves.push_back(static_cast<uint16_t>(h));
    }
    for (uint16_t h : halves) values.push_back(half_to_float(h));
  }
  return values;
}

std::vector<uint8_t> tensor_bytes(const onnx::TensorProto& tensor) {
  if (!tensor.raw_data().empty()) return {tensor.raw_data().begin(), tensor.raw_data().end()};
  return {tensor.int32_data().begin(), tensor.int32_data().end()};
}

}  // namespace

TEST(FormatsExhaustive, Fp8MatchesOnnxBackendCastTests) {
  const std::filesystem::path root = MPA_ONNX_NODE_TESTS;
  int cases = 0;
  for (const char* source : {"FLOAT", "FLOAT16"}) {
    for (const char* target : {"FLOAT8E4M3FN", "FLOAT8E5M2"}) {
      for (bool saturate : {true, false}) {
        const std::string name =
            std::string("test_cast_") + (saturate ? "" : "no_saturate_") + source + "_to_" + target;
        const std::filesystem::path data = root / name / "test_data_set_0";
        onnx::TensorProto input, output;
        ASSERT_TRUE(input.ParseFromString(read_file(data / "input_0.pb"))) << name;
        ASSERT_TRUE(output.ParseFromString(read_file(data / "output_0.pb"))) << name;
        const std::vector<float> values = tensor_floats(input);
        const std::vector<uint8_t> expected = tensor_bytes(output);
        ASSERT_EQ(values.size(), expected.size()) << name;
        ASSERT_FALSE(values.empty()) << name;
        const bool e4m3 = std::string(target) == "FLOAT8E4M3FN";
        for (size_t i = 0; i < values.size(); ++i) {
          const uint8_t code = e4m3 ? float_to_fp8_e4m3fn(values[i], saturate) : float_to_fp8_e5m2(values[i], saturate);
          EXPECT_EQ(code, expected[i]) << name << " element " << i << " = " << values[i];
        }
        ++cases;
      }
    }
  }
  EXPECT_EQ(cases, 8);
}
