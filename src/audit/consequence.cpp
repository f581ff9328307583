#include "audit/consequence.h"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <utility>

#include "runtime/precision.h"

namespace mpa {

ConsequenceTracer::ConsequenceTracer(const Session& session, ExecConfig reference_config,
                                     std::vector<probes::Divergence::Params> params, std::vector<size_t> report_slot,
                                     std::vector<std::string> report_name, std::vector<bool> kept_fp32)
    : session_(session),
      reference_config_(std::move(reference_config)),
      params_(std::move(params)),
      report_slot_(std::move(report_slot)),
      report_name_(std::move(report_name)),
      kept_fp32_(std::move(kept_fp32)) {
  for (const ValueInfo& out : session_.graph().outputs) graph_outputs_.insert(out.name);
}

void ConsequenceTracer::begin_sample() {
  traces_.clear();
  runs_left_ = kRunsPerNode * static_cast<int64_t>(session_.graph().nodes.size());
}

bool ConsequenceTracer::deviates(const Tensor& reference, const Tensor& run, size_t target,
                                 probes::Divergence& d) const {
  if (reference.shape() != run.shape() || reference.dtype() != run.dtype()) return true;
  if (!dtype_is_float(reference.dtype()))
    return reference.nbytes() != run.nbytes() || std::memcmp(reference.raw(), run.raw(), reference.nbytes()) != 0;
  d = probes::Divergence::of(reference, run, params_[target], 0);
  // Half a unit in the last place of the format: below it, the deviation is gone once the value is stored.
  return d.nonfinite() > 0 || d.max_ulp >= 0.5;
}

void ConsequenceTracer::note_harm(Trace& trace, int64_t node) {
  if (trace.result.harm_at_index >= 0) return;
  trace.result.harm_at_index = static_cast<int64_t>(report_slot_[static_cast<size_t>(node)]);
  trace.result.harm_at = report_name_[static_cast<size_t>(node)];
}

namespace {

// The reference with only its saturated elements as the format holds them: those the format turns
// non-finite or flushes to zero. The ordinary rounding of the other elements is the precision_loss
// verdict's business, not saturation's, and would keep every trace alive to the outputs.
Tensor saturated_elements(const Tensor& reference, const Tensor& deviated) {
  Tensor out = reference.clone();
  auto replace = [&](auto* r, const auto* d) {
    for (int64_t i = 0; i < out.numel(); ++i) {
      const bool saturates = std::isfinite(r[i]) && (!std::isfinite(d[i]) || (d[i] == 0 && r[i] != 0));
      if (saturates) r[i] = d[i];
    }
  };
  if (reference.dtype() == DType::Float32) replace(out.data<float>(), deviated.data<float>());
  if (reference.dtype() == DType::Float64) replace(out.data<double>(), deviated.data<double>());
  return out;
}

}  // namespace

void ConsequenceTracer::start(const std::string& value, Root root, Tensor deviated, const Tensor& reference,
                              bool narrowed, int64_t producer) {
  Trace trace;
  trace.root = root;
  trace.result.traced = 1;
  const bool comparable = reference.shape() == deviated.shape() && reference.dtype() == deviated.dtype() &&
                          (reference.dtype() == DType::Float32 || reference.dtype() == DType::Float64);
  if (comparable) deviated = saturated_elements(reference, deviated);
  probes::Divergence d;
  if (!deviates(reference, deviated, root.target, d)) return;  // the format holds it after all
  if (d.nan > 0 && producer >= 0) note_harm(trace, producer);
  if (graph_outputs_.count(value)) trace.result.outputs[value].merge(d);
  if (narrowed) trace.narrowed.insert(value);
  trace.deviated.emplace(value, std::move(deviated));
  traces_.push_back(std::move(trace));
}

void ConsequenceTracer::step(size_t index, const ValueLookup& reference, const std::vector<const Tensor*>& ref_out) {
  const Node& node = session_.graph().nodes[index];
  for (Trace& trace : traces_) {
    if (!trace.live || !trace.reaches(node)) continue;
    if (runs_left_ <= 0) {
      finish(trace, true);
      continue;
    }
    --runs_left_;
    // A consumer kept in fp32 reads a kept node's output as computed, not converted.
    const ValueLookup lookup = [&](const std::string& name) -> const Tensor* {
      auto it = trace.deviated.find(name);
      if (it == trace.deviated.end() || (kept_fp32_[index] && trace.narrowed.count(name))) return reference(name);
      return &it->second;
    };
    std::vector<const Tensor*> inputs;
    for (const std::string& name : node.inputs) inputs.push_back(name.empty() ? nullptr : lookup(name));
    // A deviation that reaches a sequence or optional value is not followed further.
    if (meets_values(node, inputs, ref_out)) {
      finish(trace, true);
      continue;
    }
    std::vector<Tensor> out =
        session_.rerun(index, inputs, reference_config_, false, node.implicit_inputs.empty() ? nullptr : &lookup);
    bool any_deviates = false;
    for (size_t o = 0; o < out.size(); ++o) {
      if (!ref_out[o] || !out[o].defined() || node.outputs[o].empty()) continue;
      probes::Divergence d;
      if (!deviates(*ref_out[o], out[o], trace.root.target, d)) continue;
      any_deviates = true;
      if (d.nan > 0) note_harm(trace, static_cast<int64_t>(index));
      if (graph_outputs_.count(node.outputs[o])) trace.result.outputs[node.outputs[o]].merge(d);
      trace.deviated.insert_or_assign(node.outputs[o], std::move(out[o]));
    }
    if (!any_deviates) trace.result.absorbed_by.push_back(report_name_[index]);
  }
}

bool ConsequenceTracer::Trace::reaches(const Node& node) const {
  for (const auto* names : {&node.inputs, &node.implicit_inputs})
    for (const std::string& name : *names)
      if (!name.empty() && deviated.count(name)) return true;
  return false;
}

bool ConsequenceTracer::follows_into(size_t index) const {
  const Node& node = session_.graph().nodes[index];
  return std::any_of(traces_.begin(), traces_.end(), [&](const Trace& t) { return t.live && t.reaches(node); });
}

void ConsequenceTracer::release(const std::vector<std::string>& names) {
  for (Trace& trace : traces_) {
    if (!trace.live) continue;
    for (const std::string& name : names) trace.deviated.erase(name);
    if (trace.deviated.empty()) finish(trace, false);
  }
}

void ConsequenceTracer::finish(Trace& trace, bool cut) {
  trace.live = false;
  trace.deviated.clear();
  report::Consequence& c = trace.result;
  c.cut = cut ? 1 : 0;
  c.absorbed = !cut && c.outputs.empty() ? 1 : 0;
  if (c.absorbed) {
    std::sort(c.absorbed_by.begin(), c.absorbed_by.end());
    c.absorbed_by.erase(std::unique(c.absorbed_by.begin(), c.absorbed_by.end()), c.absorbed_by.end());
  } else {
    c.absorbed_by.clear();  // where parts of it vanished matters less than where the rest arrived
  }
  finished_.push_back({trace.root, std::move(c)});
}

std::vector<ConsequenceTracer::Finished> ConsequenceTracer::end_sample() {
  for (Trace& trace : traces_)
    if (trace.live) finish(trace, false);
  traces_.clear();
  return std::exchange(finished_, {});
}

}  // namespace mpa
