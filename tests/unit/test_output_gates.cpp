// fix's output gates over samples (fix/output_gates.h): which gates a run may judge on some samples, with the
// reference's own outputs standing for the others, and that such a failure is a failure over every sample
// whatever the others give, while a pass there is not a pass.
#include <gtest/gtest.h>

#include "fix/output_gates.h"

using namespace mpa;
using namespace mpa::fix;

namespace {

const probes::Divergence::Params kParams(Format::FP16, probes::Tolerances{});

// One sample of output "y": the reference and the run, in rows of `width`.
OutputFigures sample(const std::vector<float>& ref, const std::vector<float>& run, int64_t index, int64_t width = 4) {
  OutputFigures f{"y", {}, 0, 0};
  const std::vector<int64_t> shape{static_cast<int64_t>(ref.size()) / width, width};
  f.add(Tensor::from_vector<float>(ref, shape), Tensor::from_vector<float>(run, shape), kParams, index);
  return f;
}

std::vector<OutputGate> gates(const std::vector<std::string>& texts) {
  std::vector<OutputGate> out;
  for (const std::string& t : texts) out.push_back(parse_output_gate(t, {"y"}));
  return out;
}

}  // namespace

TEST(OutputGates, OnlyGatesThatSomeSamplesBoundJudgeOnThem) {
  for (const char* bounded : {"max_abs_err<=0.2", "max_rel_err<0.1", "mismatch_frac<=0", "nonfinite<=0",
                              "sqnr_db>=40", "top1_agree>0.99"})
    EXPECT_TRUE(bounded_by_some_samples(parse_output_gate(bounded, {"y"}))) << bounded;
  // The cosine of every sample can be better than of some (the run's norm takes the others' too); a lower bound
  // on an error, or an equality, is no bound at all.
  for (const char* unbounded : {"cosine>=0.999", "max_abs_err>=0.1", "mismatch_frac==0", "sqnr_db<=90"})
    EXPECT_FALSE(bounded_by_some_samples(parse_output_gate(unbounded, {"y"}))) << unbounded;
}

// Sample 0 is off by 0.5 in one of four values; sample 1, not run, is exact in the bound. max_abs_err and
// mismatch_frac fail on sample 0 whatever sample 1 gives; sqnr_db too; a generous mismatch share does not, as the
// exact sample halves the share; cosine is never settled early.
TEST(OutputGates, AFailureOnSomeSamplesWithTheOthersExactFailsOnEverySample) {
  OutputFigures bounded = sample({1, 2, 3, 4}, {1.5f, 2, 3, 4}, 0);
  bounded.merge(sample({1, 2, 3, 4}, {1, 2, 3, 4}, 1));
  EXPECT_DOUBLE_EQ(bounded.metric("mismatch_frac"), 1.0 / 8);
  EXPECT_TRUE(fails_whatever_the_rest(gates({"max_abs_err<=0.2"}), {bounded}));
  EXPECT_TRUE(fails_whatever_the_rest(gates({"mismatch_frac<=0"}), {bounded}));
  EXPECT_TRUE(fails_whatever_the_rest(gates({"sqnr_db>=60"}), {bounded}));
  EXPECT_FALSE(fails_whatever_the_rest(gates({"mismatch_frac<=0.2"}), {bounded}));
  EXPECT_FALSE(fails_whatever_the_rest(gates({"cosine>=0.9999999"}), {bounded}));
  EXPECT_FALSE(fails_whatever_the_rest(gates({"max_abs_err<=0.6", "nonfinite<=0"}), {bounded}));

  // Whatever sample 1 really gives, every-sample figures are no better than the bound for these gates.
  for (const std::vector<float>& other : {std::vector<float>{1, 2, 3, 4}, std::vector<float>{1, 2.5f, 3, 9}}) {
    OutputFigures every = sample({1, 2, 3, 4}, {1.5f, 2, 3, 4}, 0);
    every.merge(sample({1, 2, 3, 4}, other, 1));
    EXPECT_GE(every.metric("max_abs_err"), bounded.metric("max_abs_err"));
    EXPECT_GE(every.metric("mismatch_frac"), bounded.metric("mismatch_frac"));
    EXPECT_LE(every.metric("sqnr_db"), bounded.metric("sqnr_db"));
  }
}

// Rows whose arg-max disagrees only add up: the exact rest bounds top1_agree from above.
TEST(OutputGates, TopOneAgreementOnSomeSamplesBoundsItOnAll) {
  OutputFigures bounded = sample({0, 1, 0, 1}, {1, 0, 0, 1}, 0, 2);  // rows of 2: the first disagrees
  bounded.merge(sample({0, 1, 0, 1}, {0, 1, 0, 1}, 1, 2));
  EXPECT_DOUBLE_EQ(bounded.metric("top1_agree"), 3.0 / 4);
  EXPECT_TRUE(fails_whatever_the_rest(gates({"top1_agree>=0.8"}), {bounded}));
  EXPECT_FALSE(fails_whatever_the_rest(gates({"top1_agree>=0.7"}), {bounded}));
}

// How narrowly a gate fails (the search retries the narrowest proofs of need first): relative to the bound,
// the value's own size for a bound of 0, nothing for a gate that holds.
TEST(OutputGates, ExcessSaysHowFarAFailingValueLiesBeyondTheBound) {
  const OutputFigures f = sample({1, 2, 3, 4}, {1.5f, 2, 3, 4}, 0);  // off by 0.5 in one of four values
  const std::vector<GateValue> v =
      check_output_gates(gates({"max_abs_err<=0.4", "mismatch_frac<=0", "sqnr_db>=40", "max_abs_err<=1"}), {f});
  ASSERT_EQ(v.size(), 4u);
  EXPECT_DOUBLE_EQ(v[0].excess, 0.25);  // 0.5 against 0.4
  EXPECT_DOUBLE_EQ(v[1].excess, 0.25);  // a share of 1/4 against 0
  EXPECT_NEAR(v[2].excess, (40 - f.metric("sqnr_db")) / 40, 1e-12);
  EXPECT_TRUE(v[3].held);
  EXPECT_EQ(v[3].excess, 0);
}
