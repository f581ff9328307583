#include "fix/mixed_runs.h"

#include <algorithm>
#include <cmath>
#include <map>

#include "common/memory_budget.h"
#include "runtime/precision.h"

namespace mpa::fix {

namespace {

// Kept runs may hold at most this many (and kRecordShareOfBudget): the search's next trial differs little from
// one of its last few. 8 rather than 4: 7.8 against 8.5 full-run equivalents on mnist-8, 16.2
// against 16.4 on yolox-nano's detector gate, 38.5 against 40.8 on ResNet-50 (yolox-nano's 4 samples then
// hold 2.2 GB instead of 1.5 at the peak, within the share).
constexpr size_t kMaxRecorded = 8;

bool same_settings(const ExecConfig& a, const ExecConfig& b) {
  return a.threads == b.threads && a.storage == b.storage && a.accumulation == b.accumulation &&
         a.tf32_gemm_inputs == b.tf32_gemm_inputs && a.profile == b.profile;
}

}  // namespace

MixedRuns::MixedRuns(std::shared_ptr<const Graph> graph, const SampleSource& samples, int64_t first, int64_t last,
                     const AuditOptions& options, bool io_in_target)
    : graph_(graph),
      samples_(samples),
      first_(first),
      last_(last),
      session_(graph, session_options(options)),
      target_(storage_format(options.targets.at(0))),
      io_in_target_(io_in_target),
      params_(storage_format(options.targets.at(0)), options.thresholds.tolerances) {
  require(options.targets.size() == 1, "fix searches one target format at a time");
  require(!options.fp8_absmax_scaling, "fix does not search FP8 keep-sets under --fp8-scaling absmax yet");
  reference_config_ = config_for(options.reference, Accumulation::FP32, RuntimeProfile::Generic, options.threads);
  fp32_config_ = session_.default_config();
  target_config_ = config_for(options.targets[0], options.accumulation, options.profile, options.threads);
  for (const ValueInfo& out : graph->outputs)
    if (out.elem_type == 0 || dtype_is_float(static_cast<DType>(out.elem_type))) outputs_.push_back(out.name);
  std::map<std::string, size_t> producer;
  for (size_t i = 0; i < graph->nodes.size(); ++i) {
    const Node& node = graph->nodes[i];
    producers_.emplace_back();
    for (const auto* names : {&node.inputs, &node.implicit_inputs})
      for (const std::string& name : *names)
        if (const auto p = producer.find(name); p != producer.end()) producers_[i].push_back(p->second);
    for (const std::string& name : node.outputs)
      if (!name.empty()) producer[name] = i;
  }
}

double MixedRuns::run_equivalents(int64_t node_runs) const {
  const double full = static_cast<double>(graph_->nodes.size()) * static_cast<double>(last_ - first_);
  return full > 0 ? static_cast<double>(node_runs) / full : 0.0;
}

void MixedRuns::take_reference(std::vector<TensorMap> outputs, std::vector<RunRecord> records) {
  require(reference_.empty() && static_cast<int64_t>(outputs.size()) == last_ - first_,
          "fix: the audit's reference is taken before any run, one per sample");
  reference_ = std::move(outputs);
  reference_taken_ = true;
  for (int64_t s = first_; s < last_; ++s) know_sample(s, samples_.sample(s));
  // The reference is the run with every node kept in FP32 where it computes as they do and reads the same
  // inputs: a base to rerun from.
  if (records.size() == reference_.size() && recording_ && !io_in_target_ &&
      same_settings(reference_config_, fp32_config_))
    remember(Recorded{std::vector<bool>(graph_->nodes.size(), true), std::move(records), 0});
}

void MixedRuns::know_sample(int64_t s, const TensorMap& sample) {
  feeds_.push_back(as_deployed(sample));
  exact_.emplace_back();
  for (const std::string& name : outputs_) {
    const Tensor& out = reference_[size_t(s - first_)].at(name);
    exact_.back().push_back(OutputFigures{name, {}, 0, 0});
    if (dtype_is_float(out.dtype())) exact_.back().back().add(out, out, params_, s - first_);
  }
  order_.push_back(size_t(s - first_));
}

void MixedRuns::run_reference() {
  StreamPlan reference;
  reference.node_config.assign(graph_->nodes.size(), reference_config_);
  // The reference is the run with every node kept in FP32 where it computes as they do and reads the same
  // inputs: a base to rerun from.
  Recorded all_fp32{std::vector<bool>(graph_->nodes.size(), true), {}, 0};
  const bool record = recording_ && !io_in_target_ && same_settings(reference_config_, fp32_config_);
  if (record) all_fp32.samples.resize(size_t(last_ - first_));
  for (int64_t s = first_; s < last_; ++s) {
    const TensorMap sample = samples_.sample(s);
    reference.record = record ? &all_fp32.samples[size_t(s - first_)] : nullptr;
    reference_.push_back(std::move(session_.run_streams(sample, {reference}).at(0)));
    know_sample(s, sample);
  }
  if (record) remember(std::move(all_fp32));
}

const std::vector<MixedRuns::InputOverflow>& MixedRuns::inputs_overflowing() {
  if (!have_reference()) run_reference();
  return inputs_overflowing_;
}

TensorMap MixedRuns::as_deployed(const TensorMap& sample) {
  if (!io_in_target_) return sample;
  TensorMap deployed;
  for (const auto& entry : sample) {
    const std::string& name = entry.first;
    const Tensor& value = entry.second;
    Tensor t = value;
    if (value.dtype() == DType::Float32) {
      t = value.clone();
      const float* v = value.data<float>();
      const auto beyond = std::count_if(
          v, v + value.numel(), [&](float x) { return std::fabs(double(x)) > format_traits(target_).max_finite; });
      if (beyond > 0) {
        auto o = std::find_if(inputs_overflowing_.begin(), inputs_overflowing_.end(),
                              [&](const InputOverflow& i) { return i.input == name; });
        if (o == inputs_overflowing_.end()) o = inputs_overflowing_.insert(o, InputOverflow{name});
        o->values += beyond;
        o->of += value.numel();
        o->absmax = std::max(o->absmax, double(*std::max_element(v, v + value.numel(), [](float a, float b) {
                               return std::fabs(a) < std::fabs(b);
                             })));
      }
      round_to_format(target_, t.data<float>(), t.numel());
    }
    deployed.emplace(name, std::move(t));
  }
  return deployed;
}

std::vector<bool> MixedRuns::to_run(const std::vector<bool>& kept, const std::vector<bool>& base) const {
  std::vector<bool> run(kept.size());
  for (size_t i = 0; i < kept.size(); ++i)
    run[i] = kept[i] != base[i] ||
             std::any_of(producers_[i].begin(), producers_[i].end(), [&](size_t p) { return bool(run[p]); });
  return run;
}

void MixedRuns::remember(Recorded recorded) {
  for (const RunRecord& r : recorded.samples) recorded.nbytes += r.nbytes();
  recorded_.push_front(std::move(recorded));
  const auto room = static_cast<size_t>(memory_budget::limit() / kRecordShareOfBudget);
  size_t held = 0, keep = 0;
  for (; keep < recorded_.size() && keep < kMaxRecorded && held + recorded_[keep].nbytes <= room; ++keep)
    held += recorded_[keep].nbytes;
  recorded_.resize(keep);
}

StreamPlan MixedRuns::plan_for(const std::vector<std::string>& keep, std::vector<bool>* kept) const {
  StreamPlan plan;
  for (const Node& node : graph_->nodes) {
    const bool in_fp32 = std::find(keep.begin(), keep.end(), node.name) != keep.end();
    plan.node_config.push_back(in_fp32 ? fp32_config_ : target_config_);
    plan.computes_in_format.push_back(!in_fp32);
    if (kept) kept->push_back(in_fp32);
  }
  return plan;
}

std::vector<MixedRuns::NodeFigures> MixedRuns::node_figures(
    const std::vector<std::vector<std::string>>& keep_sets) const {
  // Stream 0 is the reference; each node's float outputs in the others are measured against it as it runs.
  struct Measure : ExecObserver {
    const probes::Divergence::Params* params;
    size_t runs;
    int64_t sample = 0;
    std::vector<NodeFigures> figures;  // by node index; empty runs: no float output
    void node_done(size_t index, const std::vector<StreamStep>& streams) override {
      NodeFigures& f = figures[index];
      size_t measured = 0;
      for (size_t o = 0; o < streams[0].outputs.size(); ++o) {
        const Tensor* ref = streams[0].outputs[o];
        if (!ref || !dtype_is_float(ref->dtype())) continue;
        std::vector<const Tensor*> targets;
        for (size_t k = 1; k < streams.size(); ++k) targets.push_back(streams[k].outputs[o]);
        if (std::find(targets.begin(), targets.end(), nullptr) != targets.end()) continue;
        const std::vector<probes::Divergence> each = probes::Divergence::of_each(*ref, targets, *params, sample);
        if (f.runs.empty()) f.runs.resize(runs);
        for (size_t k = 0; k < runs; ++k) {
          if (f.runs[k].size() <= measured) f.runs[k].resize(measured + 1);
          f.runs[k][measured].merge(each[k]);
        }
        ++measured;
      }
    }
  } measure;
  measure.params = &params_;
  measure.runs = keep_sets.size();
  measure.figures.resize(graph_->nodes.size());
  StreamPlan reference;
  reference.node_config.assign(graph_->nodes.size(), reference_config_);
  std::vector<StreamPlan> plans{reference};
  for (const std::vector<std::string>& keep : keep_sets) plans.push_back(plan_for(keep));
  for (int64_t s = first_; s < last_; ++s) {
    measure.sample = s - first_;
    session_.run_streams(samples_.sample(s), plans, &measure);
  }
  std::vector<NodeFigures> measured;
  for (size_t i = 0; i < measure.figures.size(); ++i)
    if (!measure.figures[i].runs.empty()) {
      measure.figures[i].node = i;
      measured.push_back(std::move(measure.figures[i]));
    }
  return measured;
}

std::vector<OutputFigures> MixedRuns::bounded_by_the_rest(const std::vector<OutputFigures>& figures,
                                                          const std::vector<bool>& run) const {
  std::vector<OutputFigures> bounded = figures;
  for (size_t s = 0; s < run.size(); ++s)
    if (!run[s])
      for (size_t o = 0; o < bounded.size(); ++o) bounded[o].merge(exact_[s][o]);
  return bounded;
}

MixedRuns::Run MixedRuns::run(const std::vector<std::string>& keep, const Settled& settled, bool every_sample) {
  if (!have_reference()) run_reference();
  // Positions in order_ to run: those in play; for every sample, the others first (those in play are met
  // when the search asks for every sample, so a failure is likelier, and cheaper to find, among the others).
  const size_t in_play = std::min(in_play_, order_.size());
  std::vector<size_t> sequence;
  if (every_sample)
    for (size_t p = in_play; p < order_.size(); ++p) sequence.push_back(p);
  for (size_t p = 0; p < in_play; ++p) sequence.push_back(p);
  const size_t samples = sequence.size();
  Recorded made;
  StreamPlan plan = plan_for(keep, &made.kept);
  // Per sample, the kept run with its values that leaves the fewest nodes to run (a set run before on some
  // samples reruns nothing there). The runs used move to the front, as a new run does: the runs kept are those
  // made or used last, so that a set the search tries nodes without, one at a time, stays at hand.
  std::vector<std::vector<bool>> to_run_from;  // per kept run
  std::vector<int64_t> nodes_to_run;
  for (const Recorded& r : recorded_) {
    to_run_from.push_back(this->to_run(made.kept, r.kept));
    nodes_to_run.push_back(std::count(to_run_from.back().begin(), to_run_from.back().end(), true));
  }
  const auto nodes = static_cast<int64_t>(graph_->nodes.size());
  // recorded_.size() where no kept run saves a node: the sample runs whole.
  const auto base_for = [&](size_t s) {
    size_t best = recorded_.size();
    int64_t fewest = nodes;
    for (size_t r = 0; r < recorded_.size(); ++r)
      if (!recorded_[r].samples[s].values.empty() && nodes_to_run[r] < fewest) best = r, fewest = nodes_to_run[r];
    return best;
  };
  std::vector<bool> used(recorded_.size(), false);
  if (recording_) made.samples.resize(feeds_.size());
  Run result;
  result.every_sample = samples == order_.size();
  for (const std::string& name : outputs_) result.figures.push_back(OutputFigures{name, {}, 0, 0});
  std::vector<bool> ran(order_.size(), false);
  for (size_t done = 0; done < samples; ++done) {
    const size_t s = order_[sequence[done]];
    const size_t base = base_for(s);
    plan.reuse = nullptr;
    plan.reused.clear();
    if (base < recorded_.size()) {
      used[base] = true;
      plan.reuse = &recorded_[base].samples[s];
      plan.reused.resize(nodes);
      std::transform(to_run_from[base].begin(), to_run_from[base].end(), plan.reused.begin(),
                     [](bool run) { return !run; });
    }
    plan.record = recording_ ? &made.samples[s] : nullptr;
    TensorMap got;
    try {
      got = std::move(session_.run_streams(feeds_[s], {plan}).at(0));
    } catch (const MemoryBudgetExceeded&) {
      if (!recording_) throw;
      // Kept runs take the room this run needs: keep none from now on and run it again (what ran is spent).
      recording_ = false;
      recorded_.clear();
      return run(keep, settled, every_sample);
    }
    node_runs_ += base < recorded_.size() ? nodes_to_run[base] : nodes;
    ++result.samples;
    ran[s] = true;
    for (OutputFigures& f : result.figures) {
      const Tensor& want = reference_[s].at(f.name);
      Tensor& have = got.at(f.name);
      if (io_in_target_ && have.dtype() == DType::Float32) {
        have = have.clone();
        round_to_format(target_, have.data<float>(), have.numel());
      }
      // An output declared without a type that turns out integer has nothing a gate measures.
      if (dtype_is_float(want.dtype())) f.add(want, have, params_, static_cast<int64_t>(s));
    }
    if (!settled) continue;
    std::vector<OutputFigures> bounded = bounded_by_the_rest(result.figures, ran);
    if (settled(bounded)) {
      // This sample settled the run: it leads from now on, and joins the samples in play if it was not one.
      if (sequence[done] >= in_play_) ++in_play_;
      order_.erase(order_.begin() + static_cast<std::ptrdiff_t>(sequence[done]));
      order_.insert(order_.begin(), s);
      result.figures = std::move(bounded);
      break;
    }
  }
  // Figures of the samples in play stand for every sample with the others' the best they could be: a gate
  // they fail fails on every sample; one they meet is met on these samples.
  if (!result.every_sample && result.samples == int64_t(samples))
    result.figures = bounded_by_the_rest(result.figures, ran);
  std::deque<Recorded> used_first;
  for (const bool first : {true, false})
    for (size_t r = 0; r < recorded_.size(); ++r)
      if (used[r] == first) used_first.push_back(std::move(recorded_[r]));
  recorded_ = std::move(used_first);
  if (recording_) remember(std::move(made));
  ++runs_;
  return result;
}

}  // namespace mpa::fix
