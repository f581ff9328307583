#include "fix/keep_search.h"

#include <algorithm>
#include <iterator>

namespace mpa::fix {

namespace {

std::vector<GateValue> failing(const Verdict& v) {
  std::vector<GateValue> out;
  for (const GateValue& g : v.gates)
    if (!g.held) out.push_back(g);
  return out;
}

class Search {
 public:
  Search(const std::vector<std::string>& candidates, const Verifier& verify, const SearchLimits& limits)
      : candidates_(candidates), verify_(verify), limits_(limits) {
    for (size_t i = 0; i < candidates.size(); ++i) rank_.emplace(candidates[i], i);
  }

  SearchResult run(const std::vector<std::string>& advice) {
    std::optional<Verdict> v = trial("all in the target format", {}, true);
    if (!v) return stop("the run limit allows no run");
    if (v->pass) {
      result_.met = result_.minimal = true;
      return std::move(result_);
    }
    if (limits_.try_all_first) {
      if (!(v = trial("every candidate in FP32", candidates_, true))) return stop(limit_note());
      if (!v->pass) return none_meets(candidates_);
    }
    std::vector<std::string> keep;
    for (const std::string& node : advice) add(keep, node);
    if (!keep.empty() && !(v = trial("audit advice", keep))) return stop(limit_note(), keep);
    for (;;) {
      for (size_t batch = 1, next = 0; !v->pass; batch *= 2) {
        const size_t before = keep.size();
        for (; next < candidates_.size() && keep.size() - before < batch; ++next) add(keep, candidates_[next]);
        if (keep.size() == before) return none_meets(keep);
        if (!(v = trial("grow to " + std::to_string(keep.size()) + " nodes", keep))) return stop(limit_note(), keep);
      }
      const bool trimmed = minimise(keep);
      // The set is met on the samples in play; on every sample, or a sample that fails it joins them. A run
      // past the limit is made for this: a set is never returned as met unless run on every sample.
      const auto known = judged_.find(sorted(keep));
      if (known == judged_.end() || !known->second.pass || !known->second.every_sample) {
        v = trial("verify on every sample", keep, true, true);
        if (!v->pass) {
          forget_passes();
          if (trimmed) continue;
          return stop(limit_note() + " after a sample outside those in play failed the set", keep);
        }
      }
      result_.met = true;
      result_.minimal = trimmed;
      result_.keep = keep;
      return std::move(result_);
    }
  }

 private:
  // Drops what the set does not need, by group tests. The nodes not yet found needed are tried without in groups,
  // weakest evidence first; a group whose removal breaks a gate is split in halves, down to single nodes, which are
  // then needed in the current set. The group size follows the share of needed nodes found so far (Hwang's
  // generalised binary splitting): the first group is every such node (one run when none is needed), and groups
  // shrink to single nodes once most tried nodes turn out needed, where a larger group would only fail and be split
  // (about 2 runs per node instead of 1). A drop changes the set, and near a gate's limit the gates are not monotone
  // in it (rounding errors cancel), so nodes found needed before a drop are tried again after the others, the
  // narrowest proof first, in groups sized by what such retries found so far: the drops come first, and most nodes
  // are shown needed once, in the final set. Sweeps repeat until one drops nothing: the final set is minimal node by
  // node. False when the run limit stopped it. Measured on yolox-nano, ResNet-50 and mnist-8 in bench/README ("fix").
  bool minimise(std::vector<std::string>& keep) {
    std::map<std::string, int> needed_in;  // the generation (count of drops) a node was last found needed in
    int generation = 0;
    // Tried for the first time, and tried again after a drop: the second are mostly needed where the gates are
    // monotone in the set, and mostly not where their values hover at the limit.
    Outcomes first_tries, retries;
    for (bool again = true; again;) {
      again = false;
      std::vector<std::string> fresh, stale;  // never found needed; found needed before the last drop
      for (const std::string& node : keep) {
        const auto tried = needed_in.find(node);
        if (tried == needed_in.end())
          fresh.push_back(node);
        else if (tried->second != generation)
          stale.push_back(node);
      }
      const auto weakest_first = [&](const std::string& a, const std::string& b) { return rank(a) > rank(b); };
      std::sort(fresh.begin(), fresh.end(), weakest_first);
      // Narrowest proof first: those are the nodes a drop most likely made droppable, and each drop among the
      // retries sends the nodes shown needed before it back to be retried.
      std::stable_sort(stale.begin(), stale.end(), weakest_first);
      std::stable_sort(stale.begin(), stale.end(), [&](const std::string& a, const std::string& b) {
        return proof_margin(a) < proof_margin(b);
      });
      for (auto [nodes, outcomes] : {std::pair{&fresh, &first_tries}, std::pair{&stale, &retries}}) {
        // Groups to try, a stack: the last is tried next.
        std::vector<std::vector<std::string>> groups{*nodes};
        while (!groups.empty()) {
          std::vector<std::string> group = std::move(groups.back());
          groups.pop_back();
          const size_t size = outcomes->group_size(group.size());
          if (size < group.size()) {  // what was learnt since asks for smaller groups
            for (size_t end = group.size(); end > 0;) {
              const size_t begin = end > size ? end - size : 0;
              groups.emplace_back(group.begin() + static_cast<std::ptrdiff_t>(begin),
                                  group.begin() + static_cast<std::ptrdiff_t>(end));
              end = begin;
            }
            continue;
          }
          if (group.empty()) continue;
          std::vector<std::string> without;
          std::copy_if(keep.begin(), keep.end(), std::back_inserter(without),
                       [&](const std::string& n) { return std::find(group.begin(), group.end(), n) == group.end(); });
          const std::string purpose =
              group.size() == 1 ? "without " + group[0] : "without " + std::to_string(group.size()) + " nodes";
          const std::optional<Verdict> v = trial(purpose, without);
          if (!v) return stopped_minimising();
          if (v->pass) {
            keep = without;
            for (const std::string& node : group) result_.needed_because.erase(node);
            outcomes->droppable += static_cast<int64_t>(group.size());
            ++generation;
            again = true;
          } else if (group.size() == 1) {
            result_.needed_because[group[0]] = {failing(*v), v->samples};
            needed_in[group[0]] = generation;
            ++outcomes->needed;
          } else {
            const auto half = group.begin() + static_cast<std::ptrdiff_t>(group.size() / 2);
            groups.push_back({half, group.end()});
            groups.push_back({group.begin(), half});
          }
        }
      }
    }
    return true;
  }

  // What single-node and passing group tests found: how many nodes were needed and how many could go.
  struct Outcomes {
    int64_t needed = 0, droppable = 0;
    // The size of the next group among `untried` nodes: all of them before anything is known, then by the
    // expected count d of needed nodes among them (the share found so far, with one of each added so that
    // neither is taken as certain): single nodes where untried <= 2d - 2, else 2^floor(log2((untried - d + 1) / d)).
    size_t group_size(size_t untried) const {
      if (needed + droppable == 0) return untried;
      const double share = (static_cast<double>(needed) + 1) / (static_cast<double>(needed + droppable) + 2);
      const double expected = share * static_cast<double>(untried), n = static_cast<double>(untried);
      if (n <= 2 * expected - 2) return 1;
      const double ratio = (n - expected + 1) / expected;
      size_t size = 1;
      while (size * 2 <= untried && static_cast<double>(size * 2) <= ratio) size *= 2;
      return size;
    }
  };

  // How far the gates broke in the run that showed `node` needed: the largest excess among its failing gates.
  double proof_margin(const std::string& node) const {
    double margin = 0;
    for (const GateValue& g : result_.needed_because.at(node).failing) margin = std::max(margin, g.excess);
    return margin;
  }

  bool stopped_minimising() {
    result_.note = limit_note() + " while checking that every kept node is needed";
    return false;
  }

  // A set judged before is not run again (the group tests meet the empty set and the advice again), unless
  // it passed on fewer samples than asked for. `past_limit`: the run is made even at the run limit.
  std::optional<Verdict> trial(const std::string& purpose, const std::vector<std::string>& keep,
                               bool every_sample = false, bool past_limit = false) {
    std::vector<std::string> key = sorted(keep);
    const auto known = judged_.find(key);
    if (known != judged_.end() && (!known->second.pass || known->second.every_sample || !every_sample))
      return known->second;
    if (static_cast<int>(result_.trials.size()) >= limits_.max_runs && !past_limit) return std::nullopt;
    Verdict v = verify_(keep, every_sample);
    result_.trials.push_back({purpose, keep, v});
    judged_[std::move(key)] = v;
    return v;
  }

  // Once a sample outside those in play joined them, a pass on the others no longer says the set passes.
  void forget_passes() {
    for (auto j = judged_.begin(); j != judged_.end();)
      j = j->second.pass && !j->second.every_sample ? judged_.erase(j) : std::next(j);
  }

  static std::vector<std::string> sorted(std::vector<std::string> keep) {
    std::sort(keep.begin(), keep.end());
    return keep;
  }

  SearchResult none_meets(const std::vector<std::string>& keep) {
    return stop("with every one of the " + std::to_string(keep.size()) +
                    " candidate nodes in FP32 the gates still fail: no keep-set meets them",
                keep);
  }

  SearchResult stop(const std::string& note, const std::vector<std::string>& keep = {}) {
    result_.note = note;
    result_.keep = keep;
    return std::move(result_);
  }

  std::string limit_note() const {
    return "stopped at the run limit (" + std::to_string(limits_.max_runs) + " runs, --max-runs)";
  }

  void add(std::vector<std::string>& keep, const std::string& node) const {
    if (std::find(keep.begin(), keep.end(), node) == keep.end()) keep.push_back(node);
  }

  size_t rank(const std::string& node) const {
    const auto it = rank_.find(node);
    return it == rank_.end() ? candidates_.size() : it->second;
  }

  const std::vector<std::string>& candidates_;
  const Verifier& verify_;
  SearchLimits limits_;
  std::map<std::string, size_t> rank_;
  std::map<std::vector<std::string>, Verdict> judged_;
  SearchResult result_;
};

}  // namespace

SearchResult search_keep_set(const std::vector<std::string>& advice, const std::vector<std::string>& candidates,
                             const Verifier& verify, const SearchLimits& limits) {
  return Search(candidates, verify, limits).run(advice);
}

}  // namespace mpa::fix
