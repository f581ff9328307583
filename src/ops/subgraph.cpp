#include "ops/subgraph.h"

#include <cstring>


namespace mpa {

SubgraphRunner::SubgraphRunner(const OpInit& init, const std::string& attribute)
    : attribute_(attribute), owner_(init.node().label()) {
  const Attribute& a = init.require(attribute);
  if (a.kind != Attribute::Kind::Graph || !a.g) fail(owner_ + ": attribute '" + attribute + "' is not a graph");
  graph_ = a.g;
}

SubgraphRunner::~SubgraphRunner() = default;

namespace {

// Tells the observer that a subgraph run began, and that it ended however it ends.
class ObservedRun {
 public:
  ObservedRun(SubgraphObserver* observer, const Node& owner, const std::string& attribute, int64_t iteration)
      : observer_(observer) {
    if (observer_) observer_->enter(owner, attribute, iteration);
  }
  ~ObservedRun() {
    if (observer_) observer_->leave();
  }
  ObservedRun(const ObservedRun&) = delete;
  ObservedRun& operator=(const ObservedRun&) = delete;

 private:
  SubgraphObserver* observer_;
};

}  // namespace

std::vector<Tensor> SubgraphRunner::run(const std::vector<Tensor>& inputs, const KernelContext& ctx, int64_t iteration,
                                        const std::vector<ValuePtr>& value_inputs,
                                        std::vector<ValuePtr>* value_outputs) const {
  const ExecConfig& config = ctx.config();
  if (inputs.size() != graph_->inputs.size())
    fail(owner_ + ": its subgraph declares " + std::to_string(graph_->inputs.size()) + " inputs, " +
         std::to_string(inputs.size()) + " given");
  if (!ctx.subgraphs()) fail(owner_ + ": no executor to run its subgraph");
  std::map<std::string, Tensor> feeds;
  ValueMap values;
  if (ctx.values()) values = ctx.values()->scope;
  for (size_t i = 0; i < inputs.size(); ++i)
    if (i < value_inputs.size() && value_inputs[i])
      values[graph_->inputs[i].name] = value_inputs[i];
    else
      feeds[graph_->inputs[i].name] = inputs[i];
  const ObservedRun observed(ctx.observer(), ctx.node(), attribute_, iteration);
  const bool with_values = value_outputs || !values.empty();
  const std::map<std::string, Tensor> outputs = ctx.subgraphs()->run_subgraph(
      graph_, feeds, config, ctx.scope(), ctx.observer(), with_values ? &values : nullptr);
  std::vector<Tensor> ordered;
  if (value_outputs) value_outputs->assign(graph_->outputs.size(), nullptr);
  for (size_t o = 0; o < graph_->outputs.size(); ++o) {
    const std::string& name = graph_->outputs[o].name;
    if (auto v = values.find(name); value_outputs && v != values.end()) {
      (*value_outputs)[o] = v->second;
      ordered.emplace_back();
    } else {
      ordered.push_back(outputs.at(name));
    }
  }
  return ordered;
}

Tensor scalar_like(const ValueInfo& declared, DType dtype) {
  return Tensor(dtype, declared.has_shape && declared.dims.size() == 1 ? Shape{1} : Shape{});
}

bool condition_value(const Tensor& t, const std::string& what) {
  if (t.numel() < 1) fail(what + " is empty");
  bool value = false;
  visit_dtype(t.dtype(), [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_arithmetic_v<T>) value = t.data<T>()[0] != T(0);
    else fail(what + " has element type " + dtype_name(t.dtype()) + ", not a condition");
  });
  return value;
}

Tensor slice_along(const Tensor& t, int64_t axis, int64_t index) {
  Shape shape = t.shape();
  const int64_t outer = shape_numel(Shape(shape.begin(), shape.begin() + axis));
  const int64_t inner = shape_numel(Shape(shape.begin() + axis + 1, shape.end())) * int64_t(dtype_size(t.dtype()));
  const int64_t length = shape[size_t(axis)];
  shape.erase(shape.begin() + axis);
  Tensor out(t.dtype(), shape);
  const auto* src = static_cast<const std::byte*>(t.raw());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t o = 0; o < outer; ++o)
    std::memcpy(dst + o * inner, src + (o * length + index) * inner, size_t(inner));
  return out;
}

Tensor stack_along(const std::vector<Tensor>& parts, int64_t axis, const std::string& what) {
  if (parts.empty()) fail(what + ": no iteration ran, so a stacked output has no shape to take");
  const Tensor& first = parts.front();
  for (const Tensor& p : parts)
    if (p.shape() != first.shape() || p.dtype() != first.dtype())
      fail(what + ": iterations produced " + shape_str(first.shape()) + " and " + shape_str(p.shape()) +
           ", which cannot be stacked");
  Shape shape = first.shape();
  shape.insert(shape.begin() + axis, int64_t(parts.size()));
  Tensor out(first.dtype(), shape);
  const int64_t outer = shape_numel(Shape(first.shape().begin(), first.shape().begin() + axis));
  const int64_t inner = shape_numel(Shape(first.shape().begin() + axis, first.shape().end())) * int64_t(dtype_size(first.dtype()));
  const int64_t count = int64_t(parts.size());
  auto* dst = static_cast<std::byte*>(out.raw());
  for (int64_t k = 0; k < count; ++k) {
    const auto* src = static_cast<const std::byte*>(parts[size_t(k)].raw());
    for (int64_t o = 0; o < outer; ++o) std::memcpy(dst + (o * count + k) * inner, src + o * inner, size_t(inner));
  }
  return out;
}

}  // namespace mpa
