// The search for the smallest set of nodes to keep in FP32 that makes a mixed-precision model meet its
// gates. Every candidate set is judged by a real mixed-precision run (the Verifier); the audit only decides
// the order in which nodes are tried:
//   1. the whole model in the target format: when it meets the gates, nothing needs keeping;
//   2. the audit's advice (its unsafe nodes and their harmed consumers), verified;
//   3. while the set fails, the next candidates by evidence (unsafe, then warned, then by how far the
//      propagated error jumps at the node) are added in batches of 1, 2, 4, ... (few runs for large sets);
//   4. then every kept node, weakest evidence first, is tried without (in groups while most nodes tried could
//      go, one by one once most turn out needed): dropped where the gates still hold; nodes shown needed before
//      a drop are tried again, the narrowest proof first, and sweeps repeat until one drops nothing, so that
//      in the final set removing any single node breaks a gate — each such run is recorded as the reason the
//      node is needed;
//   5. steps 3-4 judge sets on the samples in play (the Verifier's choice: fix starts with one sample, the
//      first to fail); the set they settle on is then run on every sample, and where a sample outside them
//      fails it (it joins them), the search grows and minimises again. A set failing on some samples fails,
//      so each reason stands; the set returned is met on every sample.
#pragma once
#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "fix/output_gates.h"

namespace mpa::fix {

struct Verdict {
  bool pass = false;
  std::vector<GateValue> gates;
  double cost = 0;  // what the run executed, in full-run equivalents
  // The samples it was judged on: fewer than all when a gate failed on them whatever the others give, or
  // when judged on the samples in play; the gates' values are then those of the samples run with the others
  // counted as exact (fix/output_gates.h fails_whatever_the_rest): a failure holds for every sample.
  int64_t samples = 0;
  bool every_sample = true;  // a pass holds for every sample (not only for those in play)
};

// Runs the model with `keep` (node names) in FP32 and everything else in the target format, on the samples in
// play, or on every sample when `every_sample`.
using Verifier = std::function<Verdict(const std::vector<std::string>& keep, bool every_sample)>;

struct Trial {
  std::string purpose;  // "all in the target format", "audit advice", "grow", "without NODE"
  std::vector<std::string> keep;
  Verdict verdict;
};

struct SearchResult {
  bool met = false;               // a set meets the gates (the whole model in FP32 may be that set)
  std::vector<std::string> keep;  // in candidate order
  // For each kept node: the gates that fail without it (the run of the final sweep that tried it).
  struct Needed {
    std::vector<GateValue> failing;
    int64_t samples = 0;  // the samples that run was judged on
  };
  std::map<std::string, Needed> needed_because;
  bool minimal = false;  // every node of `keep` was tried without in the final set
  std::vector<Trial> trials;
  std::string note;  // why the search stopped short, when it did
};

struct SearchLimits {
  int max_runs = 64;
  // Whether to try every candidate in FP32 first when the whole model in the target format fails: where
  // something no keep-set controls may break the gates (inputs overflowing the target), one run says so.
  bool try_all_first = false;
};

// `advice`: the audit's keep-fp32 list; `candidates`: every node that may be kept, strongest evidence first
// (the advice's nodes among them). `verify` is called once per trial.
SearchResult search_keep_set(const std::vector<std::string>& advice, const std::vector<std::string>& candidates,
                             const Verifier& verify, const SearchLimits& limits = {});

}  // namespace mpa::fix
