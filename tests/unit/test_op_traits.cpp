// Op traits live beside each op's registration (ops/op.h MPA_OP_TRAITS): every registered op has a record,
// and the facts the audit relies on hold for the ops it relies on them for.
#include <gtest/gtest.h>

#include <utility>

#include "ops/op.h"

using namespace mpa;

TEST(OpTraits, EveryRegisteredOpHasARecord) {
  const OpRegistry& registry = OpRegistry::instance();
  for (const OpRegistry::Entry& e : registry.entries())
    EXPECT_NE(registry.traits(e.domain, e.op_type), nullptr)
        << (e.domain.empty() ? "" : e.domain + ".") << e.op_type << " has no MPA_OP_TRAITS line beside its kernel";
}

TEST(OpTraits, ValueMovingOpsAreSelectionsAndArithmeticIsNeither) {
  const OpRegistry& registry = OpRegistry::instance();
  for (const char* op : {"Identity", "Reshape", "Flatten", "Squeeze", "Unsqueeze", "Transpose"}) {
    ASSERT_NE(registry.traits("", op), nullptr) << op;
    EXPECT_TRUE(registry.traits("", op)->moves_values_only) << op;
    EXPECT_TRUE(registry.traits("", op)->rounding_commutes) << op << ": a reordering selects its input's values";
  }
  for (const char* op : {"Add", "MatMul", "Softmax", "Pad", "Resize", "AveragePool", "Cast"}) {
    ASSERT_NE(registry.traits("", op), nullptr) << op;
    EXPECT_FALSE(registry.traits("", op)->rounding_commutes) << op;
    EXPECT_FALSE(registry.traits("", op)->moves_values_only) << op;
  }
  Node unknown;
  unknown.op_type = "NoSuchOp";
  EXPECT_FALSE(traits_of(unknown).rounding_commutes);
}

// Precision classes: an op that selects values is exact (rounding commutes with it, so it has no rounding of
// its own); GEMM-like ops sum as the --accumulate setting says, reductions, softmax and normalisations in FP32.
TEST(OpTraits, PrecisionClassesAndWhereSumsRun) {
  const OpRegistry& registry = OpRegistry::instance();
  for (const OpRegistry::Entry& e : registry.entries()) {
    const OpTraits& t = *registry.traits(e.domain, e.op_type);
    if (t.rounding_commutes) {
      EXPECT_EQ(t.precision, PrecisionClass::Exact) << e.op_type;
    }
    EXPECT_EQ(t.sums_in != SumsIn::None, t.precision == PrecisionClass::Accumulating) << e.op_type;
  }
  for (const char* op : {"MatMul", "Gemm", "Conv", "ConvTranspose", "Einsum", "LSTM", "GRU", "RNN"})
    EXPECT_EQ(registry.traits("", op)->sums_in, SumsIn::GemmSetting) << op;
  for (const char* op : {"ReduceSum", "ReduceMean", "Softmax", "LayerNormalization", "AveragePool", "CumSum", "CumProd",
                         "NegativeLogLikelihoodLoss", "SoftmaxCrossEntropyLoss", "DFT", "STFT", "Det", "LRN"})
    EXPECT_EQ(registry.traits("", op)->sums_in, SumsIn::Fp32) << op;
  // Attention: QK^T and PV are GEMMs; the softmax between them sums in FP32 whatever the setting.
  for (const auto& [domain, op] : {std::pair{"", "Attention"},
                                   {"com.microsoft", "Attention"},
                                   {"com.microsoft", "MultiHeadAttention"},
                                   {"com.microsoft", "GroupQueryAttention"}})
    EXPECT_EQ(registry.traits(domain, op)->sums_in, SumsIn::GemmSetting) << domain << "." << op;
  EXPECT_EQ(registry.traits("", "RotaryEmbedding")->precision, PrecisionClass::Elementwise);
  for (const char* op : {"Exp", "Tanh", "Erf", "Pow", "Sigmoid", "Gelu"})
    EXPECT_EQ(registry.traits("", op)->precision, PrecisionClass::Transcendental) << op;
  for (const char* op : {"Add", "Div", "Sqrt", "Cast"})
    EXPECT_EQ(registry.traits("", op)->precision, PrecisionClass::Elementwise) << op;
  for (const char* op : {"Relu", "MaxPool", "Gather", "Equal", "ArgMax", "Where"})
    EXPECT_EQ(registry.traits("", op)->precision, PrecisionClass::Exact) << op;
}

// onnxruntime's contrib ops (com.microsoft): the fused normalisations sum in FP32, the fused and quantised GEMMs
// follow --accumulate, the GELU variants are transcendental, BiasAdd is two additions.
TEST(OpTraits, ContribOps) {
  const OpRegistry& registry = OpRegistry::instance();
  const std::string ms = "com.microsoft";
  for (const char* op : {"SkipLayerNormalization", "SkipSimplifiedLayerNormalization", "EmbedLayerNormalization"}) {
    ASSERT_NE(registry.traits(ms, op), nullptr) << op;
    EXPECT_EQ(registry.traits(ms, op)->sums_in, SumsIn::Fp32) << op;
  }
  EXPECT_EQ(registry.traits("", "SimplifiedLayerNormalization")->sums_in, SumsIn::Fp32);
  for (const char* op : {"FusedMatMul", "MatMulNBits"}) {
    ASSERT_NE(registry.traits(ms, op), nullptr) << op;
    EXPECT_EQ(registry.traits(ms, op)->sums_in, SumsIn::GemmSetting) << op;
  }
  for (const char* op : {"Gelu", "FastGelu", "BiasGelu", "QuickGelu"}) {
    ASSERT_NE(registry.traits(ms, op), nullptr) << op;
    EXPECT_EQ(registry.traits(ms, op)->precision, PrecisionClass::Transcendental) << op;
  }
  ASSERT_NE(registry.traits(ms, "BiasAdd"), nullptr);
  EXPECT_EQ(registry.traits(ms, "BiasAdd")->precision, PrecisionClass::Elementwise);
}
