// The keep-set search (fix/keep_search.h) against verifiers whose answer is known: it finds exactly the
// nodes the gates need, whatever the audit's order and advice, proves each one needed, and stops honestly.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "fix/keep_search.h"

using namespace mpa::fix;

namespace {

// Passes when every culprit is kept; the failing gate names the first culprit missing.
Verifier needs(std::set<std::string> culprits, int* runs) {
  return [culprits, runs](const std::vector<std::string>& keep, bool) {
    ++*runs;
    Verdict v;
    v.pass = true;
    for (const std::string& c : culprits)
      if (std::find(keep.begin(), keep.end(), c) == keep.end()) {
        v.pass = false;
        v.gates.push_back({"nonfinite<=0", "y", 1.0, false});
        break;
      }
    return v;
  };
}

std::set<std::string> as_set(const std::vector<std::string>& v) { return {v.begin(), v.end()}; }

std::vector<std::string> nodes(int n) {
  std::vector<std::string> out;
  for (int i = 0; i < n; ++i) out.push_back("n" + std::to_string(i));
  return out;
}

}  // namespace

TEST(KeepSearch, NothingToKeepWhenTheWholeModelPasses) {
  int runs = 0;
  const SearchResult r = search_keep_set({"n1"}, nodes(5), needs({}, &runs));
  EXPECT_TRUE(r.met);
  EXPECT_TRUE(r.keep.empty());
  EXPECT_EQ(runs, 1);
}

TEST(KeepSearch, TheAdviceTrimmedToTheCulprits) {
  int runs = 0;
  // The audit advises four nodes; two of them are needed.
  const SearchResult r = search_keep_set({"n0", "n1", "n2", "n3"}, nodes(10), needs({"n1", "n3"}, &runs));
  EXPECT_TRUE(r.met);
  EXPECT_TRUE(r.minimal);
  EXPECT_EQ(as_set(r.keep), (std::set<std::string>{"n1", "n3"}));
  for (const std::string& n : r.keep) EXPECT_FALSE(r.needed_because.at(n).failing.empty()) << n;
  EXPECT_EQ(runs, static_cast<int>(r.trials.size()));
}

TEST(KeepSearch, GrowsPastAnIncompleteAdviceThenMinimises) {
  int runs = 0;
  // The culprits lie deep in the candidate order; the advice names none of them.
  const SearchResult r = search_keep_set({"n0"}, nodes(40), needs({"n20", "n33"}, &runs));
  EXPECT_TRUE(r.met);
  EXPECT_TRUE(r.minimal);
  EXPECT_EQ(as_set(r.keep), (std::set<std::string>{"n20", "n33"}));
  // Batches of 1, 2, 4, ... reach n33 in 6 growth runs; group tests then find the two culprits among the 40
  // kept nodes in far fewer runs than trying each node alone.
  EXPECT_LE(runs, 2 + 6 + 30);
}

TEST(KeepSearch, SaysSoWhenNoSetMeetsTheGates) {
  int runs = 0;
  const SearchResult r = search_keep_set({}, nodes(3), needs({"not a candidate"}, &runs));
  EXPECT_FALSE(r.met);
  EXPECT_NE(r.note.find("still fail"), std::string::npos) << r.note;
  EXPECT_EQ(r.keep.size(), 3u);
}

TEST(KeepSearch, StopsAtTheRunLimitAndDoesNotClaimMinimality) {
  int runs = 0;
  const SearchResult r = search_keep_set({"n0", "n1", "n2", "n3", "n4"}, nodes(5), needs({"n4"}, &runs), {3});
  EXPECT_EQ(runs, 3);
  EXPECT_TRUE(r.met);
  EXPECT_FALSE(r.minimal);
  EXPECT_NE(r.note.find("run limit"), std::string::npos) << r.note;
}

// A node needed only while another is kept in the target format (an island border): after dropping the other,
// the sweep tries the first again, so the final set is 1-minimal as a whole.
TEST(KeepSearch, SweepsAgainAfterADrop) {
  int runs = 0;
  const Verifier verify = [&](const std::vector<std::string>& keep, bool) {
    ++runs;
    const auto has = [&](const char* n) { return std::find(keep.begin(), keep.end(), n) != keep.end(); };
    Verdict v;
    v.pass = has("n0") && (has("n1") || !has("n2"));
    if (!v.pass) v.gates.push_back({"max_rel_err<=0.01", "y", 0.5, false});
    return v;
  };
  const SearchResult r = search_keep_set({"n0", "n1", "n2"}, nodes(3), verify);
  EXPECT_TRUE(r.minimal);
  EXPECT_EQ(as_set(r.keep), (std::set<std::string>{"n0"}));
}

// Three samples, the first two with a culprit each; sets are judged on the samples in play (the first) until
// one is run on every sample: the second sample fails it and joins, the search grows again, and the set
// returned meets all three, each node shown needed, its last run on every sample.
TEST(KeepSearch, JudgesOnTheSamplesInPlayAndVerifiesOnEverySample) {
  const std::vector<std::string> culprit{"n7", "n2"};  // of sample 0, of sample 1
  size_t in_play = 1;
  int every = 0;
  const Verifier verify = [&](const std::vector<std::string>& keep, bool every_sample) {
    every += every_sample;
    Verdict v;
    const size_t samples = every_sample ? 3 : in_play;
    v.every_sample = samples == 3;
    v.pass = true;
    for (size_t s = 0; s < samples && v.pass; ++s)
      if (s < culprit.size() && std::find(keep.begin(), keep.end(), culprit[s]) == keep.end()) {
        v.pass = false;
        v.samples = static_cast<int64_t>(s + 1);
        v.gates.push_back({"max_abs_err<=0.2", "y", 1.0, false});
        if (s >= in_play) ++in_play;
      }
    if (v.pass) v.samples = static_cast<int64_t>(samples);
    return v;
  };
  const SearchResult r = search_keep_set({}, nodes(10), verify);
  EXPECT_TRUE(r.met);
  EXPECT_TRUE(r.minimal);
  EXPECT_EQ(as_set(r.keep), (std::set<std::string>{"n2", "n7"}));
  EXPECT_EQ(in_play, 2u);
  for (const std::string& n : r.keep) EXPECT_FALSE(r.needed_because.at(n).failing.empty()) << n;
  // The first run (all in the target format), the set of sample 0 alone, then the final set.
  EXPECT_EQ(every, 3);
  EXPECT_TRUE(r.trials.back().verdict.every_sample);
  EXPECT_TRUE(r.trials.back().verdict.pass);
  EXPECT_EQ(as_set(r.trials.back().keep), as_set(r.keep));
}

// Most of the grown set needed (a strict gate on a deep model): once the first group tests show it, the
// nodes are tried one by one, not in groups that would fail and be split (about two runs per node).
TEST(KeepSearch, TriesNodesOneByOneWhereMostAreNeeded) {
  std::set<std::string> culprits;
  for (int i = 0; i < 40; i += 4)
    for (int j = 1; j < 4; ++j) culprits.insert("n" + std::to_string(i + j));  // 30 of the 40
  int runs = 0;
  const SearchResult r = search_keep_set({}, nodes(40), needs(culprits, &runs), {1000});
  EXPECT_TRUE(r.minimal);
  EXPECT_EQ(as_set(r.keep), culprits);
  // The whole model in the format, 7 growth runs, each of the 40 nodes tried without once, each needed one
  // shown needed before the last drop tried again, and a few group tests before the share of needed nodes is
  // known (halving every failing group took 134 runs).
  EXPECT_LE(runs, 1 + 7 + 40 + 30 + 8) << runs;
}

// After a drop, the nodes shown needed before it are tried again, the narrowest proof first: here x was needed
// only while y was kept (its gate failed by 5%), y is dropped last in the first sweep, and x, retried first,
// goes; the others, shown needed by wide margins, are retried once, in the final set (tried before x, they
// would be retried twice).
TEST(KeepSearch, RetriesTheNarrowestProofFirstAfterADrop) {
  const Verifier verify = [](const std::vector<std::string>& keep, bool) {
    const auto has = [&](const char* n) { return std::find(keep.begin(), keep.end(), n) != keep.end(); };
    const bool all_n = has("n1") && has("n2") && has("n3");
    Verdict v;
    v.pass = all_n && (has("x") || !has("y"));
    if (!v.pass) v.gates.push_back({"max_abs_err<=0.2", "y", all_n ? 0.21 : 1.0, false, all_n ? 0.05 : 4.0});
    return v;
  };
  // Strongest evidence first: y, x, then the others.
  const std::vector<std::string> order{"y", "x", "n1", "n2", "n3"};
  const SearchResult r = search_keep_set(order, order, verify);
  EXPECT_TRUE(r.minimal);
  EXPECT_EQ(as_set(r.keep), (std::set<std::string>{"n1", "n2", "n3"}));
  // The whole model, the advice, 6 runs of the first sweep, then x and the three others once more (one run
  // tries x and n3 without together).
  EXPECT_EQ(r.trials.size(), 13u);
}
