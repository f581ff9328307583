#include "audit/auditor.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <deque>
#include <optional>
#include <set>
#include <unordered_map>
#include <unordered_set>

#include "audit/consequence.h"
#include "audit/verdict.h"
#include "probes/device_probes.h"
#include "probes/fast_paths.h"
#include "runtime/precision.h"
#include "tensor/format_storage.h"

namespace mpa {

SessionOptions session_options(const AuditOptions& options) {
  SessionOptions o;
  o.threads = options.threads;
  o.device = options.device;
  return o;
}

std::string accumulation_name(Accumulation a) { return a == Accumulation::FP16 ? "fp16" : "fp32"; }
std::string profile_name(RuntimeProfile p) { return p == RuntimeProfile::OrtCuda ? "ort-cuda" : "generic"; }

const char* isolated_pass_name(IsolatedPass pass) {
  switch (pass) {
    case IsolatedPass::Suspects: return "suspects";
    case IsolatedPass::Off: return "off";
    default: return "all";
  }
}

IsolatedPass parse_isolated_pass(const std::string& name) {
  for (IsolatedPass pass : {IsolatedPass::All, IsolatedPass::Suspects, IsolatedPass::Off})
    if (name == isolated_pass_name(pass)) return pass;
  fail("--isolated must be all, suspects or off (not '" + name + "')");
}

namespace {

// Adds the wall time of a scope to a counter.
class ScopedSeconds {
 public:
  explicit ScopedSeconds(double& total) : total_(total), start_(std::chrono::steady_clock::now()) {}
  ~ScopedSeconds() { total_ += std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count(); }

 private:
  double& total_;
  std::chrono::steady_clock::time_point start_;
};

bool is_float(DType t) { return dtype_is_float(t); }

std::vector<const Tensor*> views_of(const std::vector<Tensor>& tensors) {
  std::vector<const Tensor*> out;
  for (const Tensor& t : tensors) out.push_back(t.defined() ? &t : nullptr);
  return out;
}

// Whether a node reads or writes floating values (only those are measured and re-run in a format).
bool touches_floats(const std::vector<const Tensor*>& inputs, const std::vector<const Tensor*>& outputs) {
  for (const auto* group : {&inputs, &outputs})
    for (const Tensor* t : *group)
      if (t && is_float(t->dtype())) return true;
  return false;
}

// The subgraphs of a node (If's branches, a loop body) in report order, then before else, each with the
// name its nodes' paths use ("then", "else", "body").
std::vector<std::pair<std::string, const Graph*>> subgraphs_of(const Node& node) {
  std::vector<std::pair<std::string, const Graph*>> out;
  const std::string suffix = "_branch";
  for (const auto& [name, a] : node.attributes) {
    if (a.kind != Attribute::Kind::Graph || !a.g) continue;
    const bool branch =
        name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0;
    out.emplace_back(branch ? name.substr(0, name.size() - suffix.size()) : name, a.g.get());
  }
  std::stable_sort(out.begin(), out.end(),
                   [](const auto& a, const auto& b) { return a.first == "then" && b.first != "then"; });
  return out;
}

// One run of a node inside a subgraph: the node, and the iteration of each enclosing subgraph run
// (outermost first; 0 for a branch), which is the same in every stream that takes the same path.
using InnerRunKey = std::pair<const Node*, std::vector<int64_t>>;

// Reference outputs of the inner runs of one control-flow node, kept until its target runs pair with them.
// Beyond kBudgetBytes further runs are not kept, and go unpaired: their propagated figures then cover
// fewer runs than the reference figures (the metrics' `compared` counts tell).
struct InnerCapture {
  static constexpr size_t kBudgetBytes = size_t{1} << 30;
  std::map<InnerRunKey, std::vector<Tensor>> runs;
  size_t bytes = 0;
};

// One sample's reference figures of one output: range, histogram, format fit per target.
struct ReferenceFigures {
  probes::RangeProbe range;
  probes::ExpHistogram hist;
  std::vector<probes::FormatFit> fits;
};

// One sample's figures of one output: what a node that only moves values (Reshape, Transpose, ...) has
// too. Counts, extremes and histograms are the same for any order of the same values; sums are those of
// the input's order (a Transpose measured itself sums in its own order, equal to the last few bits only,
// which is what audits with reuse off, under --keep-fp32 or FP8 scaling, report for it).
struct OutputFigures {
  ReferenceFigures reference;
  std::vector<probes::Divergence> stored, propagated;  // per target
  std::vector<probes::ExpHistogram> propagated_hist;   // per target
  size_t propagated_targets = 0;                       // targets whose propagated run was compared

  explicit OutputFigures(size_t targets) : stored(targets), propagated(targets), propagated_hist(targets) {}
};

// A node whose one output holds exactly the values of its input 0 (OpTraits::moves_values_only).
bool only_moves_values(const Node& node) {
  return traits_of(node).moves_values_only && node.outputs.size() == 1 && !node.inputs.empty();
}

// One sample's figures of a node's outputs that decide whether their consequences are traced
// (worth_tracing): the reference's format fit per target, taken in the first target's pass, and the
// non-finite values of each target's isolated run.
// The sample's propagated divergences serve IsolatedPass::Suspects (Impl::suspect).
struct TraceCues {
  std::vector<std::vector<probes::FormatFit>> fits;      // [output][target]
  std::vector<std::vector<int64_t>> isolated_nonfinite;  // [output][target]
  std::vector<std::vector<std::optional<probes::Divergence>>> propagated;  // [output][target]; none: not compared
  std::vector<std::vector<double>> stored_sqnr;                          // [output][target]; NaN: not compared
  TraceCues(size_t outputs, size_t targets)
      : fits(outputs, std::vector<probes::FormatFit>(targets)),
        isolated_nonfinite(outputs, std::vector<int64_t>(targets, 0)),
        propagated(outputs, std::vector<std::optional<probes::Divergence>>(targets)),
        stored_sqnr(outputs, std::vector<double>(targets, std::nan(""))) {}
};

// One value's SQNR in one sample and target: merely stored in the format, and as the propagated run has it.
struct SampleSqnr {
  double stored = probes::Divergence::kMaxSqnrDb, propagated = probes::Divergence::kMaxSqnrDb;
};

// Whether two inputs hold the same values bit for bit (both omitted counts).
bool same_values(const Tensor* a, const Tensor* b) {
  if (a == b) return true;
  if (!a || !b || !a->defined() || !b->defined()) return false;
  if (a->dtype() != b->dtype() || a->shape() != b->shape()) return false;
  if (!a->device().is_host() || !b->device().is_host()) return false;  // on a device: only the same tensor
  return a->raw() == b->raw() || std::memcmp(a->raw(), b->raw(), a->nbytes()) == 0;
}

// How the isolated figures of one run of a node against one target are obtained.
enum class IsolatedRun {
  None,        // no floating values
  Stored,      // rounding commutes with the op: the reference output stored in the format (OpTraits::rounding_commutes)
  Exact,       // the node is kept in fp32: alone, it computes the reference
  Run,         // run the node alone on its reference inputs stored in the format
  Propagated,  // its propagated run read exactly those inputs: that run is the isolated run
  Deferred,    // decided after the propagated figures (IsolatedPass::Suspects); not measured with them
};

}  // namespace

struct Auditor::Impl {
  std::shared_ptr<const Graph> graph;
  AuditOptions options;
  Session session;
  ExecConfig reference_config, fp32_config;
  std::vector<ExecConfig> target_configs;
  // The report's nodes: each top-level node after the nodes of its subgraphs, depth first.
  std::vector<report::NodeStats> nodes;
  std::vector<size_t> top_slot;                        // graph node index -> slot in `nodes`
  std::unordered_map<const Node*, size_t> inner_slot;  // node of a subgraph -> slot in `nodes`
  std::vector<bool> kept_fp32;                         // by graph node index
  // Values whose figures a value-moving node reuses (only_moves_values): kept per sample until released.
  std::unordered_set<std::string> figures_reused;
  report::NodeStats graph_inputs;  // the graph inputs' figures, as the outputs of a node that feeds them
  std::vector<probes::Divergence::Params> divergence_params;
  std::vector<probes::FormatFit::Bounds> fit_bounds;  // per target, of its storage format
  Auditor::TimeSplit time;
  std::unordered_set<std::string> read_in_format;  // values some node computing in the format reads
  std::unique_ptr<ConsequenceTracer> tracer;
  // The executor's streams: the reference, then each target's whole-graph run (nodes kept in fp32 compute
  // in fp32 there), stepped in lockstep by Session::run_streams.
  std::vector<StreamPlan> plans;
  std::vector<bool> has_subgraphs;  // by graph node index
  // The reference absmax of the running node's outputs, which FP8 targets' per-tensor output scales follow.
  std::vector<double> running_absmax;
  std::vector<std::unordered_map<std::string, SampleSqnr>> sample_sqnr;  // [target]: this sample's (note_sample_sqnr)

  Impl(std::shared_ptr<const Graph> g, AuditOptions o)
      : graph(std::move(g)), options(std::move(o)), session(graph, session_options(options)) {
    require(options.reference == Format::FP32 || options.reference == Format::FP64,
            "the reference must be fp32 or fp64");
    require(!options.targets.empty(), "no target format to audit");
    reference_config = config_for(options.reference, Accumulation::FP32, RuntimeProfile::Generic, options.threads);
    fp32_config = session.default_config();
    reference_initializers();  // converted once per format, not per sample
    for (Format target : options.targets) {
      target_configs.push_back(config_for(target, options.accumulation, options.profile, options.threads));
      target_initializers(target_configs.size() - 1);
      divergence_params.emplace_back(storage_format(target), options.thresholds.tolerances);
      fit_bounds.emplace_back(storage_format(target));
    }
    // Subgraphs run through their own sessions, which store values without the per-tensor scales that
    // the reference's absmax gives at the top level: their figures would be those of unscaled FP8.
    for (size_t k = 0; k < options.targets.size(); ++k)
      for (const Node& node : graph->nodes)
        if (scaled(k) && !subgraphs_of(node).empty())
          fail(node.label() + ": --fp8-scaling absmax does not reach inside If/Loop/Scan subgraphs yet; audit " +
               target_name(k) + " unscaled or without this node");
    mark_kept_nodes();
    // Reuse needs the value-moving node's runs to be plain permutations of its input's in every stream:
    // no node computing in fp32 amid the format, no per-tensor FP8 scale.
    bool reuse = options.keep_fp32.empty();
    for (size_t k = 0; k < options.targets.size(); ++k) reuse = reuse && !scaled(k);
    for (const Node& node : graph->nodes)
      if (reuse && only_moves_values(node)) figures_reused.insert(node.inputs[0]);
    for (size_t i = 0; i < graph->nodes.size(); ++i)
      top_slot.push_back(add_to_skeleton(graph->nodes[i], {graph.get()}, graph->nodes[i].name, "", kept_fp32[i]));
    std::vector<std::string> report_names;
    for (size_t i = 0; i < graph->nodes.size(); ++i) {
      report_names.push_back(nodes[top_slot[i]].name);
      if (kept_fp32[i]) continue;
      for (const auto* names : {&graph->nodes[i].inputs, &graph->nodes[i].implicit_inputs})
        read_in_format.insert(names->begin(), names->end());
    }
    tracer = std::make_unique<ConsequenceTracer>(session, reference_config, divergence_params, top_slot,
                                                 std::move(report_names), kept_fp32);
    make_plans();
  }

  void make_plans() {
    StreamPlan reference_plan;
    reference_plan.node_config.assign(graph->nodes.size(), reference_config);
    plans.push_back(std::move(reference_plan));
    for (size_t k = 0; k < options.targets.size(); ++k) {
      StreamPlan target;
      for (size_t i = 0; i < graph->nodes.size(); ++i) {
        target.node_config.push_back(kept_fp32[i] ? fp32_config : target_configs[k]);
        target.computes_in_format.push_back(!kept_fp32[i]);
      }
      target.fp8_absmax_scaling = scaled(k);
      if (scaled(k)) target.output_scale = [this, k](size_t, size_t o) { return scale_for(k, running_absmax[o]); };
      plans.push_back(std::move(target));
    }
    for (const Node& node : graph->nodes) has_subgraphs.push_back(!subgraphs_of(node).empty());
  }

  std::string target_name(size_t k) const { return std::string(format_name(options.targets[k])); }

  // The graph's initializers as the reference runs and as target k's nodes read them (the executor's).
  const std::map<std::string, Tensor>& reference_initializers() const {
    return session.initializers_in(reference_config.storage);
  }
  const std::map<std::string, Tensor>& target_initializers(size_t k) const {
    return session.initializers_in(target_configs[k].storage, true, scaled(k));
  }

  bool scaled(size_t k) const {
    const Format f = options.targets[k];
    return absmax_scaled(f, options.fp8_absmax_scaling);
  }
  // The per-tensor scale of target k for a tensor whose reference absmax is given (1 when unscaled).
  double scale_for(size_t k, double absmax) const { return scaled(k) ? absmax_scale(options.targets[k], absmax) : 1.0; }
  // The same from the tensor itself (feeds, initializers), computing its absmax only when scaled.
  double scale_of(size_t k, const Tensor& t) const {
    return scaled(k) ? scale_for(k, backend_of(t.device()).absmax(t)) : 1.0;
  }
  // `t` stored in target k's format, where it is.
  Tensor in_target_format(size_t k, const Tensor& t) {
    ScopedSeconds converting(time.convert);
    return backend_of(t.device()).convert(t, target_configs[k].storage, scale_of(k, t));
  }

  void mark_kept_nodes() {
    kept_fp32.assign(graph->nodes.size(), false);
    for (const std::string& name : options.keep_fp32) {
      auto node = std::find_if(graph->nodes.begin(), graph->nodes.end(), [&](const Node& n) { return n.name == name; });
      if (!(node != graph->nodes.end()))
        fail("--keep-fp32 '" + name +
             "': the model has no such node (nodes inside subgraphs are kept with their top-level owner)");
      kept_fp32[size_t(node - graph->nodes.begin())] = true;
    }
  }

  // Adds the nodes of a node's subgraphs under its path, then the node itself, to the report's skeleton:
  // the order they finish in (the node completes after everything its subgraphs run). Returns its slot.
  // `graphs` are the node's graph and those enclosing it, innermost first: where its weights may live.
  size_t add_to_skeleton(const Node& node, const std::vector<const Graph*>& graphs, const std::string& path,
                         const std::string& scope, bool kept) {
    for (const auto& [subgraph_name, subgraph] : subgraphs_of(node)) {
      std::vector<const Graph*> inner_graphs{subgraph};
      inner_graphs.insert(inner_graphs.end(), graphs.begin(), graphs.end());
      const std::string inner_scope = path + "/" + subgraph_name;
      for (const Node& inner : subgraph->nodes)
        inner_slot[&inner] = add_to_skeleton(inner, inner_graphs, inner_scope + "/" + inner.name, inner_scope, kept);
    }
    report::NodeStats stats;
    stats.index = static_cast<int64_t>(nodes.size());
    stats.name = path;
    stats.scope = scope;
    stats.op_type = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
    const OpTraits& traits = traits_of(node);
    stats.op_class = precision_class_name(traits.precision);
    if (traits.sums_in == SumsIn::Fp32) stats.sums_in = "fp32";
    if (traits.sums_in == SumsIn::GemmSetting)
      stats.sums_in = options.accumulation == Accumulation::FP16 ? "fp16" : "fp32";
    stats.inputs = node.inputs;
    stats.outputs = node.outputs;
    for (const auto& name : node.inputs) {
      const Tensor* weight = nullptr;
      for (auto g = graphs.begin(); g != graphs.end() && !weight && !name.empty(); ++g) {
        auto it = (*g)->initializers.find(name);
        if (it != (*g)->initializers.end()) weight = &it->second;
      }
      if (!weight || !is_float(weight->dtype())) continue;
      report::WeightStats w;
      w.name = name;
      w.count = weight->numel();
      for (size_t k = 0; k < options.targets.size(); ++k)
        w.targets[target_name(k)] =
            probes::FormatFit::of(*weight, storage_format(options.targets[k]), scale_of(k, *weight));
      stats.weights.push_back(std::move(w));
    }
    for (size_t k = 0; k < options.targets.size(); ++k) stats.targets[target_name(k)].kept_fp32 = kept;
    nodes.push_back(std::move(stats));
    return nodes.size() - 1;
  }

  // The output entries of a node's statistics, made on its first run; later runs merge their shapes in.
  void ensure_tensor_stats(report::NodeStats& stats, const std::vector<std::string>& outputs,
                           const std::vector<const Tensor*>& ref_out) const {
    if (!stats.tensors.empty()) {
      for (size_t o = 0; o < outputs.size(); ++o)
        if (ref_out[o]) stats.tensors[o].shape = report::merged_shape(stats.tensors[o].shape, ref_out[o]->shape());
      return;
    }
    for (size_t o = 0; o < outputs.size(); ++o) {
      report::TensorStats ts;
      ts.name = outputs[o];
      if (ref_out[o]) {
        ts.shape = ref_out[o]->shape();
        const bool widened = options.reference == Format::FP64 && ref_out[o]->dtype() == DType::Float64;
        ts.dtype = dtype_name(widened ? DType::Float32 : ref_out[o]->dtype());
        ts.measured = is_float(ref_out[o]->dtype());
      }
      for (size_t k = 0; k < options.targets.size(); ++k) ts.targets[target_name(k)] = {};
      stats.tensors.push_back(std::move(ts));
    }
  }

  // One chunk's reference figures: range, histogram and format fit for every target.
  struct ReferenceChunk {
    probes::RangeProbe::Chunk range;
    probes::ExpHistogram::Chunk hist;
    std::vector<probes::FormatFit::Chunk> fits;
  };
  ReferenceChunk reference_chunk(const Tensor& ref, int64_t begin, int64_t end) const {
    ReferenceChunk c;
    c.fits.resize(fit_bounds.size());
    if (ref.dtype() == DType::Float32) {
      const float* x = ref.data<float>() + begin;
      probes::fast::range(x, end - begin, c.range);
      if (std::isfinite(c.range.sum_sq)) {  // every value finite (probes/fast_paths.h)
        probes::fast::histogram(x, end - begin, static_cast<float>(c.range.absmax()), c.hist);
        for (size_t k = 0; k < fit_bounds.size(); ++k)
          probes::fast::format_fit(x, end - begin, fit_bounds[k], c.fits[k]);
        return c;
      }
      c.range = {};
    }
    probes::for_each_value(ref, begin, end, [&](double x, int64_t) {
      c.range.add(x);
      c.hist.add(x);
      for (size_t k = 0; k < fit_bounds.size(); ++k) c.fits[k].add(x, fit_bounds[k]);
    });
    return c;
  }

  // One sample's reference figures of one output, from its chunks in order.
  ReferenceFigures fold_reference(const Tensor& ref, const std::vector<ReferenceChunk>& chunks) const {
    ReferenceFigures f;
    f.fits.resize(fit_bounds.size());
    for (const ReferenceChunk& c : chunks) {
      f.range.absorb(c.range);
      f.hist.absorb(c.hist);
      for (size_t k = 0; k < f.fits.size(); ++k) f.fits[k].absorb(c.fits[k]);
    }
    // A second pass, once the absmax is known: scaled targets' fits, and which flushed values matter.
    const double absmax = f.range.absmax();
    std::vector<size_t> again;
    for (size_t k = 0; k < f.fits.size(); ++k)
      if (scale_for(k, absmax) != 1 ||
          (f.fits[k].flush_to_zero > 0 &&
           probes::FormatFit::flushes_can_matter(storage_format(options.targets[k]), absmax)))
        again.push_back(k);
    if (again.empty()) return f;
    std::optional<std::vector<probes::FormatFit>> fits = fits_on_device(ref, again, absmax);
    if (!fits) {
      const Tensor host = session.to_host(ref);
      fits.emplace();
      for (const size_t k : again) {
        const double scale = scale_for(k, absmax);
        const Format storage = storage_format(options.targets[k]);
        probes::FormatFit fit;
        if (scale != 1)
          fit = probes::FormatFit::of(host, storage, scale);
        else
          fit.significant_flush = probes::FormatFit::count_significant_flushes(host, storage, absmax);
        fits->push_back(fit);
      }
    }
    for (size_t j = 0; j < again.size(); ++j)
      if (scale_for(again[j], absmax) != 1)
        f.fits[again[j]] = (*fits)[j];
      else
        f.fits[again[j]].significant_flush = (*fits)[j].significant_flush;
    return f;
  }

  // [SECTION] Probes where the values are: a device that computes probes (Backend::probe) measures its
  // tensors there and returns per-chunk statistics, folded here in chunk order as probes/ folds the host's.

  // The device holding `ref` and every run, when it computes probes.
  static const Backend* probing_device(const Tensor& ref, const std::vector<const Tensor*>& runs) {
    if (ref.device().is_host()) return nullptr;
    const Backend& device = backend_of(ref.device());
    if (!device.computes_probes()) return nullptr;
    for (const Tensor* run : runs)
      if (run->device() != ref.device()) return nullptr;
    return &device;
  }

  // Target formats `targets`' fits of a reference on a device with its absmax known (their scales, and
  // significant flushes counted); none where the host must.
  std::optional<std::vector<probes::FormatFit>> fits_on_device(const Tensor& ref, const std::vector<size_t>& targets,
                                                               double absmax) const {
    const Backend* device = probing_device(ref, {});
    if (!device) return std::nullopt;
    std::vector<kernels::FitBounds> bounds;
    for (const size_t k : targets) {
      const Format storage = storage_format(options.targets[k]);
      bounds.push_back(probes::FormatFit::Bounds(storage, scale_for(k, absmax)));
      bounds.back().significant = probes::FormatFit::significant_flush_threshold(storage, absmax);
    }
    const probes::Divergence::Params unused(Format::FP32, {});
    std::optional<probes::DeviceFigures> figures = probes::probe_on_device(*device, ref, false, bounds, {}, unused, 0);
    if (!figures) return std::nullopt;
    std::vector<probes::FormatFit> fits;
    for (size_t f = 0; f < bounds.size(); ++f) fits.push_back(probes::fold_fit(figures->chunks, f, bounds.size()));
    return fits;
  }

  // The divergence of each run from `ref` in one sample, the reference stored in a format first when
  // `stored` is given; with `reference_chunks` (and `stored`), also the reference's own chunk figures.
  // Where the values are: on their device when it computes probes, else on the host (copies counted).
  std::vector<probes::Divergence> divergences(const Tensor& ref, const probes::Divergence::StoredReference* stored,
                                              const std::vector<const Tensor*>& runs,
                                              const probes::Divergence::Params& params, int64_t sample,
                                              const std::vector<probes::ExpHistogram*>& hists,
                                              std::vector<ReferenceChunk>* reference_chunks) const {
    if (const Backend* device = probing_device(ref, runs)) {
      Tensor stored_values;
      std::vector<const Tensor*> measured;
      std::vector<probes::ExpHistogram*> measured_hists;
      if (stored) {
        stored_values = device->convert(ref, stored->format, stored->scale);
        measured.push_back(&stored_values);
        measured_hists.push_back(nullptr);
      }
      measured.insert(measured.end(), runs.begin(), runs.end());
      for (size_t j = 0; j < runs.size(); ++j) measured_hists.push_back(j < hists.size() ? hists[j] : nullptr);
      const std::vector<kernels::FitBounds> fits(reference_chunks ? fit_bounds.begin() : fit_bounds.end(),
                                                 fit_bounds.end());
      if (std::optional<probes::DeviceFigures> figures = probes::probe_on_device(
              *device, ref, reference_chunks != nullptr, fits, measured, params, sample, measured_hists)) {
        if (reference_chunks) {
          const ProbeChunks& chunks = figures->chunks;
          reference_chunks->assign(chunks.range.size(), ReferenceChunk{});
          for (size_t c = 0; c < chunks.range.size(); ++c) {
            ReferenceChunk& r = (*reference_chunks)[c];
            r.range = chunks.range[c];
            r.hist = chunks.hist[c];
            r.fits.assign(chunks.fits.begin() + static_cast<std::ptrdiff_t>(c * fits.size()),
                          chunks.fits.begin() + static_cast<std::ptrdiff_t>((c + 1) * fits.size()));
          }
        }
        return std::move(figures->runs);
      }
    }
    std::deque<Tensor> copies;
    const auto on_host = [&](const Tensor* t) {
      return t->device().is_host() ? t : &copies.emplace_back(session.to_host(*t));
    };
    const Tensor& host_ref = *on_host(&ref);
    std::vector<const Tensor*> host_runs;
    for (const Tensor* run : runs) host_runs.push_back(on_host(run));
    if (!stored) return probes::Divergence::of_each(host_ref, host_runs, params, sample, hists);
    probes::Divergence::ChunkVisitor take_reference;
    if (reference_chunks) {
      reference_chunks->resize(static_cast<size_t>((ref.numel() + probes::kChunk - 1) / probes::kChunk));
      take_reference = [&](int64_t chunk, int64_t begin, int64_t end) {
        (*reference_chunks)[static_cast<size_t>(chunk)] = reference_chunk(host_ref, begin, end);
      };
    }
    return probes::Divergence::of_stored_and_each(host_ref, *stored, host_runs, params, sample, hists, take_reference);
  }

  // Each output's reference absmax in this run, which FP8 per-tensor scales need before the target runs
  // are stored; 0 (unused) without scaled targets. The reference's other figures are taken in the
  // divergence pass of the first target (measure_target_runs), which reads each chunk once for both.
  std::vector<double> scale_absmax(const std::vector<const Tensor*>& ref_out) {
    std::vector<double> absmax(ref_out.size(), 0.0);
    bool any_scaled = false;
    for (size_t k = 0; k < options.targets.size(); ++k) any_scaled = any_scaled || scaled(k);
    if (!any_scaled) return absmax;
    ScopedSeconds probing(time.probes);
    for (size_t o = 0; o < ref_out.size(); ++o)
      if (ref_out[o]) absmax[o] = backend_of(ref_out[o]->device()).absmax(*ref_out[o]);
    return absmax;
  }

  // Records, once per node and run ("reference" or a target), a placement other than the backend asked for.
  static void note_placement(report::NodeStats& stats, const Session& owner, size_t index, const ExecConfig& config,
                             const std::string& run) {
    if (stats.fallbacks.count(run)) return;
    Placement placed = owner.placement(index, config);
    if (placed.backend != &owner.requested_backend()) stats.fallbacks.emplace(run, std::move(placed.fallback_reason));
  }

  IsolatedRun isolated_run(const Node& node, size_t k, bool has_float, bool kept) const {
    if (!has_float) return IsolatedRun::None;
    if (kept) return IsolatedRun::Exact;
    return !scaled(k) && traits_of(node).rounding_commutes ? IsolatedRun::Stored : IsolatedRun::Run;
  }

  // The isolated run of node `index` of `node_session` in target k (IsolatedRun::Run): the node fed
  // `value(name)`, its reference inputs stored in the format, its outputs stored in the format.
  std::vector<Tensor> run_isolated(const Session& node_session, size_t index, size_t k, const ScopeLookup& value,
                                   const std::vector<double>& absmax) {
    const Node& node = node_session.graph().nodes[index];
    std::vector<const Tensor*> inputs;
    {
      ScopedSeconds converting(time.convert);  // the reference inputs stored in the format, made on first read
      for (const auto& name : node.inputs) inputs.push_back(name.empty() ? nullptr : value(name));
    }
    ScopedSeconds executing(time.execute), isolating(time.isolated);
    return node_session.rerun(
        index, inputs, target_configs[k], true, node.implicit_inputs.empty() ? nullptr : &value,
        [&](size_t o) { return scale_for(k, absmax[o]); }, node_session.requested_backend().computes_probes());
  }

  // Merges one sample's reference figures of output o into its statistics (and into `kept` and `cues`,
  // when not null).
  void merge_reference(report::TensorStats& ts, const ReferenceFigures& figures, OutputFigures* kept, TraceCues* cues,
                       size_t o) {
    ts.range.merge(figures.range);
    ts.hist.merge(figures.hist);
    for (size_t k = 0; k < options.targets.size(); ++k) ts.targets[target_name(k)].fit.merge(figures.fits[k]);
    if (kept) kept->reference = figures;
    if (cues) cues->fits[o] = figures.fits;
  }

  // Merges one run's figures against target k into the node's statistics, each output's runs compared
  // with its reference in one pass: the reference stored in the format, the isolated run (`iso_out`, when
  // `how` is Run), the propagated run (`prop_out`, empty for a run whose propagated twin comes later).
  // The first target's pass (k = 0) also takes the reference's own figures (range, histogram, format fits)
  // and merges them. `keep[o]` (when given and not null) receives output o's figures of this sample;
  // `reused` (when not null) stands for output 0's figures, which are its input's (only_moves_values; a
  // value-moving node's isolated run is Stored). `cues` (when not null) receives what tracing needs.
  void measure_target_runs(report::NodeStats& stats, size_t k, IsolatedRun how,
                           const std::vector<const Tensor*>& ref_out, const std::vector<double>& absmax,
                           const std::vector<Tensor>& iso_out, const std::vector<const Tensor*>& prop_out,
                           int64_t sample, const std::vector<OutputFigures*>& keep, const OutputFigures* reused,
                           TraceCues* cues) {
    ScopedSeconds probing(time.probes);
    auto comparable = [&](const Tensor* run, size_t o) {
      return run && run->defined() && run->numel() == ref_out[o]->numel() && is_float(run->dtype());
    };
    for (size_t o = 0; o < ref_out.size(); ++o) {
      if (!stats.tensors[o].measured || !ref_out[o]) continue;
      report::TensorTarget& tt = stats.tensors[o].targets[target_name(k)];
      // This sample's divergences: the input's where the node only moves its values, else measured.
      const probes::Divergence *stored_d, *isolated_d = nullptr, *propagated_d = nullptr;
      const probes::ExpHistogram* propagated_hist = nullptr;
      std::vector<probes::Divergence> d;
      probes::ExpHistogram measured_hist;
      OutputFigures* kept = o < keep.size() ? keep[o] : nullptr;
      const bool with_reference = k == 0;
      if (reused && o == 0) {
        stored_d = &reused->stored[k];
        propagated_d = &reused->propagated[k];
        propagated_hist = &reused->propagated_hist[k];
        if (with_reference) merge_reference(stats.tensors[o], reused->reference, kept, cues, o);
      } else {
        // Result 0 is the reference stored in the format, then the runs in this order.
        std::vector<const Tensor*> runs;
        std::vector<probes::ExpHistogram*> hists;
        const Tensor* prop = o < prop_out.size() ? prop_out[o] : nullptr;
        const Tensor* iso = how == IsolatedRun::Exact                       ? ref_out[o]
                            : how == IsolatedRun::Run && o < iso_out.size() ? &iso_out[o]
                                                                            : nullptr;
        const size_t iso_at = comparable(iso, o) ? runs.size() + 1 : 0;
        if (iso_at) runs.push_back(iso), hists.push_back(nullptr);
        const size_t prop_at = comparable(prop, o) ? runs.size() + 1 : 0;
        if (prop_at) runs.push_back(prop), hists.push_back(&measured_hist);
        std::vector<ReferenceChunk> reference_chunks;
        const double scale = scale_for(k, absmax[o]);
        const probes::Divergence::StoredReference stored{target_configs[k].storage, scale};
        d = divergences(*ref_out[o], &stored, runs,
                        scale == 1 ? divergence_params[k] : divergence_params[k].scaled_by(scale), sample, hists,
                        with_reference ? &reference_chunks : nullptr);
        if (with_reference)
          merge_reference(stats.tensors[o], fold_reference(*ref_out[o], reference_chunks), kept, cues, o);
        stored_d = &d[0];
        if (iso_at) isolated_d = &d[iso_at];
        if (prop_at) propagated_d = &d[prop_at], propagated_hist = &measured_hist;
      }
      if (how == IsolatedRun::Stored) isolated_d = stored_d;
      if (how == IsolatedRun::Propagated) isolated_d = propagated_d;
      if (cues && isolated_d) cues->isolated_nonfinite[o][k] = isolated_d->nonfinite();
      if (cues && propagated_d) cues->propagated[o][k] = *propagated_d;
      if (cues && stored_d->compared) cues->stored_sqnr[o][k] = stored_d->sqnr_db();
      tt.stored.merge(*stored_d);
      if (isolated_d) tt.isolated.merge(*isolated_d);
      if (propagated_d) {
        tt.propagated.merge(*propagated_d);
        tt.propagated_hist.merge(*propagated_hist);
      }
      if (kept) {
        kept->stored[k] = *stored_d;
        if (propagated_d) {
          kept->propagated[k] = *propagated_d;
          kept->propagated_hist[k] = *propagated_hist;
          ++kept->propagated_targets;
        }
      }
    }
  }

  // The isolated figures of a run decided after the propagated ones (IsolatedRun::Deferred, then run).
  void measure_isolated(report::NodeStats& stats, size_t k, const std::vector<const Tensor*>& ref_out,
                        const std::vector<double>& absmax, const std::vector<Tensor>& iso_out, int64_t sample,
                        TraceCues& cues) {
    ScopedSeconds probing(time.probes);
    for (size_t o = 0; o < ref_out.size() && o < iso_out.size(); ++o) {
      if (!stats.tensors[o].measured || !ref_out[o]) continue;
      const Tensor& iso = iso_out[o];
      if (!iso.defined() || iso.numel() != ref_out[o]->numel() || !is_float(iso.dtype())) continue;
      const double scale = scale_for(k, absmax[o]);
      const probes::Divergence d =
          divergences(*ref_out[o], nullptr, {&iso},
                      scale == 1 ? divergence_params[k] : divergence_params[k].scaled_by(scale), sample, {}, nullptr)
              .front();
      cues.isolated_nonfinite[o][k] = d.nonfinite();
      stats.tensors[o].targets[target_name(k)].isolated.merge(d);
    }
  }

  // Whether node i's propagated run in target k read exactly what its isolated run reads (its reference
  // inputs stored in the format), so that it computed the isolated outputs bit for bit: same kernel,
  // same settings, same inputs. Not for nodes with subgraphs (they also read enclosing values by name)
  // or per-tensor FP8 scales (the isolated run takes its own).
  // A value of the run (not an initializer: those are converted once, before any run) is checked against the
  // reference input `reference[j]` block by block (holds_in_format), not against the converted copy that an
  // isolated run reads: most such checks fail in their first block, and under --isolated suspects most nodes then
  // need no isolated run, nor that copy (ResNet-50: some 15 ms of a one-sample audit's 210 went to making them).
  // On a device, where values are compared only by identity (same_values), a value of the run is never the
  // reference's copy, so the answer is no without making the copy.
  bool reads_as_isolated(size_t i, size_t k, const StreamStep& target,
                         const std::vector<const Tensor*>& reference) const {
    const Node& node = graph->nodes[i];
    if (has_subgraphs[i] || scaled(k) || node.inputs.empty()) return false;
    const Format storage = target_configs[k].storage;
    for (size_t j = 0; j < node.inputs.size(); ++j) {
      const std::string& name = node.inputs[j];
      const Tensor *read = target.inputs[j], *ref = j < reference.size() ? reference[j] : nullptr;
      if (name.empty() || !read || !ref || graph->initializers.count(name)) {
        if (!same_values(read, name.empty() ? nullptr : (*target.reference_as_read)(name))) return false;
        continue;
      }
      if (!read->device().is_host() || !ref->device().is_host()) return false;
      const bool blockwise = storage != Format::FP32 && storage != Format::FP64 &&
                             (ref->dtype() == DType::Float32 || ref->dtype() == DType::Float64) &&
                             read->shape() == ref->shape();
      if (blockwise ? !holds_in_format(*read, *ref, storage)
                    : !same_values(read, (*target.reference_as_read)(name)))
        return false;
    }
    return true;
  }

  // This sample's SQNR of node outputs and graph inputs, per target (Impl::suspect reads it), until released.
  void note_sample_sqnr(const std::vector<std::string>& names, const TraceCues& cues) {
    for (size_t k = 0; k < options.targets.size(); ++k)
      for (size_t o = 0; o < names.size(); ++o)
        if (!names[o].empty() && cues.propagated[o][k] && !std::isnan(cues.stored_sqnr[o][k]))
          sample_sqnr[k][names[o]] = {cues.stored_sqnr[o][k], cues.propagated[o][k]->sqnr_db()};
  }

  // Under IsolatedPass::Suspects, whether node i's isolated error in target k could weigh in its verdict
  // in this sample. Yes where a value leaves the format's window (an output or weight overflows or
  // flushes significantly, the propagated run turns non-finite, an output is not compared), and where its
  // isolated SQNR, estimated from the propagated run, comes within the margin of the warn limit. The
  // estimate: the node degrades its propagated inputs' SQNR by J dB (their worst against its outputs'
  // worst), and it degrades its inputs' storage error alike, so alone it reaches about their stored SQNR
  // minus J; a node reading no measured value (graph inputs and weights only) has its propagated SQNR.
  bool suspect(const Node& node, const report::NodeStats& stats, size_t k, const TraceCues& cues) const {
    const std::string fmt = target_name(k);
    double out_propagated = probes::Divergence::kMaxSqnrDb;
    for (size_t o = 0; o < stats.tensors.size(); ++o) {
      if (!stats.tensors[o].measured) continue;
      const probes::FormatFit& fit = cues.fits[o][k];
      const std::optional<probes::Divergence>& propagated = cues.propagated[o][k];
      if (fit.overflow > 0 || fit.significant_flush > 0 || !propagated) return true;
      if (propagated->nonfinite() > 0 || propagated->compared < propagated->ref_finite) return true;
      if (propagated->compared > 0) out_propagated = std::min(out_propagated, propagated->sqnr_db());
    }
    for (const report::WeightStats& w : stats.weights) {
      const probes::FormatFit& fit = w.targets.at(fmt);
      if (fit.overflow > 0 || fit.significant_flush > 0) return true;
    }
    double in_stored = probes::Divergence::kMaxSqnrDb, in_propagated = probes::Divergence::kMaxSqnrDb;
    bool reads_measured = false;
    for (const std::string& name : node.inputs) {
      auto f = sample_sqnr[k].find(name);
      if (name.empty() || f == sample_sqnr[k].end()) continue;
      reads_measured = true;
      in_stored = std::min(in_stored, f->second.stored);
      in_propagated = std::min(in_propagated, f->second.propagated);
    }
    const double isolated_estimate = reads_measured ? in_stored - (in_propagated - out_propagated) : out_propagated;
    return isolated_estimate < options.thresholds.sqnr_warn_db.at(fmt) + options.suspect_margin_db;
  }

  void observe_propagated(report::NodeStats& stats, size_t k, const std::vector<const Tensor*>& ref_out,
                          const std::vector<const Tensor*>& prop_out, int64_t sample) {
    ScopedSeconds probing(time.probes);
    for (size_t o = 0; o < ref_out.size(); ++o) {
      if (!stats.tensors[o].measured || !ref_out[o] || !prop_out[o]) continue;
      report::TensorTarget& tt = stats.tensors[o].targets[target_name(k)];
      if (prop_out[o]->numel() == ref_out[o]->numel() && is_float(prop_out[o]->dtype()))
        tt.propagated.merge(
            probes::Divergence::of(*ref_out[o], *prop_out[o], divergence_params[k], sample, &tt.propagated_hist));
    }
  }

  // Where a subgraph run is: the iteration of each enclosing run, outermost first (InnerRunKey).
  class RunPath : public SubgraphObserver {
   public:
    void enter(const Node&, const std::string&, int64_t iteration) override { iterations_.push_back(iteration); }
    void leave() override { iterations_.pop_back(); }

   protected:
    std::vector<int64_t> iterations_;
  };

  // Watches the reference run of a control-flow node: every node its subgraphs run is probed, re-run alone
  // in each target format, and its outputs kept for the target runs to pair with.
  class ReferenceWatch : public RunPath {
   public:
    ReferenceWatch(Impl& audit, int64_t sample, bool kept) : audit_(audit), sample_(sample), kept_(kept) {}
    void node_done(const Session& inner, size_t index, const std::vector<const Tensor*>& inputs,
                   const std::vector<const Tensor*>& outputs, const ExecConfig& config,
                   const ScopeLookup& scope) override {
      ScopedSeconds watching(seconds);
      audit_.note_placement(audit_.nodes[audit_.inner_slot.at(&inner.graph().nodes[index])], inner, index, config,
                            "reference");
      audit_.observe_inner_reference(inner, index, inputs, outputs, scope, {&inner.graph().nodes[index], iterations_},
                                     sample_, kept_, capture);
    }
    InnerCapture capture;
    double seconds = 0;  // spent observing, not running the node itself (excluded from its wall time)

   private:
    Impl& audit_;
    int64_t sample_;
    bool kept_;
  };

  // Watches a control-flow node's run in target k, pairing each inner run with the reference's.
  class PropagatedWatch : public RunPath {
   public:
    PropagatedWatch(Impl& audit, size_t k, int64_t sample, const InnerCapture& capture)
        : audit_(audit), k_(k), sample_(sample), capture_(capture) {}
    void node_done(const Session& inner, size_t index, const std::vector<const Tensor*>&,
                   const std::vector<const Tensor*>& outputs, const ExecConfig& config, const ScopeLookup&) override {
      const Node* node = &inner.graph().nodes[index];
      audit_.note_placement(audit_.nodes[audit_.inner_slot.at(node)], inner, index, config, audit_.target_name(k_));
      auto run = capture_.runs.find({node, iterations_});
      if (run != capture_.runs.end())
        audit_.observe_propagated(audit_.nodes[audit_.inner_slot.at(node)], k_, views_of(run->second), outputs,
                                  sample_);
    }

   private:
    Impl& audit_;
    size_t k_;
    int64_t sample_;
    const InnerCapture& capture_;
  };

  void observe_inner_reference(const Session& inner, size_t index, const std::vector<const Tensor*>& inputs,
                               const std::vector<const Tensor*>& ref_out, const ScopeLookup& scope, InnerRunKey key,
                               int64_t sample, bool kept, InnerCapture& capture) {
    const Node& node = inner.graph().nodes[index];
    report::NodeStats& stats = nodes[inner_slot.at(&node)];
    ++stats.executions;
    ensure_tensor_stats(stats, node.outputs, ref_out);
    const std::vector<double> absmax = scale_absmax(ref_out);
    const bool has_float = touches_floats(inputs, ref_out) && !meets_values(node, inputs, ref_out);
    for (size_t k = 0; k < options.targets.size(); ++k) {
      // The reference values the node reads, stored in the format; initializers converted once per audit.
      std::unordered_map<std::string, Tensor> converted;
      const ScopeLookup value = [&](const std::string& name) -> const Tensor* {
        const Tensor* ref = scope(name);
        if (!ref) return nullptr;
        const auto& outer = reference_initializers();
        if (auto init = outer.find(name); init != outer.end() && &init->second == ref)
          return &target_initializers(k).at(name);
        const auto& own = inner.initializers_in(reference_config.storage);
        if (auto init = own.find(name); init != own.end() && &init->second == ref)
          return &inner.initializers_in(target_configs[k].storage, true, scaled(k)).at(name);
        auto c = converted.find(name);
        if (c == converted.end()) c = converted.emplace(name, in_target_format(k, *ref)).first;
        return &c->second;
      };
      const IsolatedRun how = isolated_run(node, k, has_float, kept);
      const std::vector<Tensor> iso_out =
          how == IsolatedRun::Run ? run_isolated(inner, index, k, value, absmax) : std::vector<Tensor>{};
      measure_target_runs(stats, k, how, ref_out, absmax, iso_out, {}, sample, {}, nullptr, nullptr);
    }
    // Only measured (floating) outputs are compared with the target run: the others are not kept.
    if (capture.bytes >= InnerCapture::kBudgetBytes || !has_float) return;
    std::vector<Tensor>& kept_outputs = capture.runs[std::move(key)];
    for (size_t o = 0; o < ref_out.size(); ++o) {
      const bool measured = ref_out[o] && stats.tensors[o].measured;
      kept_outputs.push_back(measured ? *ref_out[o] : Tensor());
      capture.bytes += measured ? ref_out[o]->nbytes() : 0;
    }
  }

  // The graph inputs as fed (the reference) and as the target runs read them: converted to the format,
  // which is both their stored and their propagated value (and their isolated one).
  void measure_graph_inputs(const TensorMap& feeds, int64_t sample) {
    std::vector<std::string> names;
    std::vector<Tensor> fed;
    for (const ValueInfo& in : graph->inputs) {
      names.push_back(in.name);
      // An input backed by an initializer need not be fed: then the initializer is its value.
      auto f = feeds.find(in.name);
      auto init = reference_initializers().find(in.name);
      fed.push_back(
          f != feeds.end()
              ? (options.reference == Format::FP64 ? host_backend().convert(f->second, Format::FP64, 1) : f->second)
          : init != reference_initializers().end() ? init->second
                                                   : Tensor());
    }
    const std::vector<const Tensor*> ref_in = views_of(fed);
    ensure_tensor_stats(graph_inputs, names, ref_in);
    const std::vector<double> absmax = scale_absmax(ref_in);
    TraceCues cues(names.size(), options.targets.size());
    for (size_t k = 0; k < options.targets.size(); ++k) {
      std::vector<Tensor> converted;
      for (const std::string& name : names) {
        auto f = feeds.find(name);
        auto init = target_initializers(k).find(name);
        converted.push_back(f != feeds.end()                       ? in_target_format(k, f->second)
                            : init != target_initializers(k).end() ? init->second
                                                                   : Tensor());
      }
      const std::vector<const Tensor*> read_in_format = views_of(converted);
      measure_target_runs(graph_inputs, k, IsolatedRun::Stored, ref_in, absmax, {}, read_in_format, sample, {}, nullptr,
                          &cues);
      // Nodes kept in fp32 read a graph input as given: its conversion is a deviation they do not see.
      for (size_t o = 0; o < names.size(); ++o)
        if (graph_inputs.tensors[o].measured &&
            worth_tracing(cues.fits[o][k], cues.isolated_nonfinite[o][k], options.thresholds))
          start_trace(names[o], {ConsequenceTracer::Root::kGraphInput, o, k}, *read_in_format[o], *ref_in[o], true, -1);
    }
    note_sample_sqnr(names, cues);
  }

  // Starts tracing a value in target k from `deviated` (its form in the format), widened like the
  // reference when that is fp64.
  void start_trace(const std::string& value, ConsequenceTracer::Root root, const Tensor& deviated,
                   const Tensor& reference, bool narrowed, int64_t producer) {
    ScopedSeconds tracing(time.consequences);
    const bool widen = options.reference == Format::FP64 && deviated.dtype() == DType::Float32;
    const Tensor host_deviated = session.to_host(deviated);
    tracer->start(value, root, widen ? host_backend().convert(host_deviated, Format::FP64, 1) : host_deviated,
                  session.to_host(reference), narrowed, producer);
  }

  // Starts tracing node i's outputs whose figures in target k call for it: each as the target run makes
  // it alone (the isolated run, or the reference stored in the format). A node kept in fp32 is traced
  // where a consumer computing in the format reads its output converted.
  void trace_outputs(size_t i, size_t k, IsolatedRun how, const std::vector<const Tensor*>& ref_out,
                     const std::vector<Tensor>& iso_out, const TraceCues& cues) {
    const Node& node = graph->nodes[i];
    const report::NodeStats& stats = nodes[top_slot[i]];
    for (size_t o = 0; o < ref_out.size(); ++o) {
      if (!ref_out[o] || !stats.tensors[o].measured || node.outputs[o].empty()) continue;
      if (kept_fp32[i] && !read_in_format.count(node.outputs[o])) continue;
      if (!worth_tracing(cues.fits[o][k], cues.isolated_nonfinite[o][k], options.thresholds)) continue;
      const bool isolated = (how == IsolatedRun::Run || how == IsolatedRun::Propagated) && o < iso_out.size() &&
                            iso_out[o].defined();
      start_trace(node.outputs[o], {top_slot[i], o, k}, isolated ? iso_out[o] : in_target_format(k, *ref_out[o]),
                  *ref_out[o], kept_fp32[i], static_cast<int64_t>(i));
    }
  }

  // Merges the sample's finished traces into the statistics of the values they started from.
  void merge_traces() {
    for (ConsequenceTracer::Finished& f : tracer->end_sample()) {
      report::NodeStats& owner =
          f.root.slot == ConsequenceTracer::Root::kGraphInput ? graph_inputs : nodes[f.root.slot];
      owner.tensors[f.root.output].targets[target_name(f.root.target)].consequence.merge(f.consequence);
    }
  }

  // One sample through every stream: the executor steps them in lockstep and shows each node's runs to
  // this observer, which probes them, runs the node alone in each format, and traces consequences.
  class SampleRun : public ExecObserver {
   public:
    SampleRun(Impl& audit, int64_t sample, const std::function<void(size_t)>& on_node)
        : audit_(audit), sample_(sample), on_node_(on_node) {}

    SubgraphObserver* subgraphs(size_t index, size_t stream) override {
      if (!audit_.has_subgraphs[index]) return nullptr;
      if (stream == 0) {
        reference_watch_ = std::make_unique<ReferenceWatch>(audit_, sample_, audit_.kept_fp32[index]);
        return reference_watch_.get();
      }
      target_watch_ = std::make_unique<PropagatedWatch>(audit_, stream - 1, sample_, reference_watch_->capture);
      return target_watch_.get();
    }

    void after_first(size_t, const StreamStep& reference) override {
      audit_.running_absmax = audit_.scale_absmax(reference.outputs);
    }

    bool wants_device_time() const override { return audit_.options.timing; }
    bool reads_device_tensors() const override { return true; }

    void node_done(size_t i, const std::vector<StreamStep>& streams) override {
      Impl& a = audit_;
      const Node& node = a.graph->nodes[i];
      report::NodeStats& stats = a.nodes[a.top_slot[i]];
      const size_t targets = a.options.targets.size();
      const bool kept = a.kept_fp32[i];
      ++stats.executions;
      // Wall time of the reference run, without what the audit spent observing inside it (subgraph nodes).
      const double reference_seconds = streams[0].run_seconds - (reference_watch_ ? reference_watch_->seconds : 0);
      a.time.reference += reference_seconds;
      for (const StreamStep& s : streams) {
        a.time.execute += &s == &streams[0] ? reference_seconds : s.run_seconds;
        a.time.convert += s.convert_seconds;
      }
      // In the report only when asked for: wall time is the one figure that differs between runs, and
      // without --timing the report must be byte-identical for the same model, inputs and seed.
      if (a.options.timing) stats.time_ms_total += 1e3 * reference_seconds;
      if (a.options.timing && streams[0].device_seconds)
        stats.device_time_ms_total = stats.device_time_ms_total.value_or(0) + 1e3 * *streams[0].device_seconds;
      const std::vector<const Tensor*>& ref_in = streams[0].inputs;
      const std::vector<const Tensor*>& ref_view = streams[0].outputs;
      a.ensure_tensor_stats(stats, node.outputs, ref_view);
      for (size_t s = 0; s < streams.size(); ++s)
        note_placement(stats, a.session, i, *streams[s].config, s == 0 ? "reference" : a.target_name(s - 1));
      // This sample's figures of the values a value-moving node will reuse, and those it reuses.
      std::vector<OutputFigures*> keep(node.outputs.size(), nullptr);
      for (size_t o = 0; o < node.outputs.size(); ++o)
        if (a.figures_reused.count(node.outputs[o]))
          keep[o] = &figures_.insert_or_assign(node.outputs[o], OutputFigures(targets)).first->second;
      const OutputFigures* reused = nullptr;
      if (only_moves_values(node) && ref_in[0] && ref_view[0] && ref_in[0]->numel() == ref_view[0]->numel() &&
          ref_in[0]->dtype() == ref_view[0]->dtype())
        if (auto f = figures_.find(node.inputs[0]); f != figures_.end() && f->second.propagated_targets == targets)
          reused = &f->second;
      const std::vector<double>& absmax = a.running_absmax;
      const bool has_float = touches_floats(ref_in, ref_view) && !meets_values(node, ref_in, ref_view);
      const ScopeLookup& reference = *streams[0].scope;
      if (a.tracer->follows_into(i)) {
        ScopedSeconds tracing(a.time.consequences);
        std::vector<Tensor> host_out;
        for (const Tensor* out : ref_view) host_out.push_back(out ? a.session.to_host(*out) : Tensor());
        a.tracer->step(i, reference, views_of(host_out));
      }
      TraceCues cues(node.outputs.size(), targets);
      for (size_t k = 0; k < targets; ++k) {
        // The reference values stored in the target format, as the executor keeps them until their last reader.
        const StreamStep& target = streams[1 + k];
        IsolatedRun how = a.isolated_run(node, k, has_float, kept);
        if (how == IsolatedRun::Run && a.reads_as_isolated(i, k, target, ref_in)) how = IsolatedRun::Propagated;
        if (how == IsolatedRun::Run && a.options.isolated != IsolatedPass::All) how = IsolatedRun::Deferred;
        std::vector<Tensor> iso_out =
            how == IsolatedRun::Run ? a.run_isolated(a.session, i, k, *target.reference_as_read, absmax)
                                    : std::vector<Tensor>{};
        if (how == IsolatedRun::Propagated)
          for (const Tensor* out : target.outputs) iso_out.push_back(out ? *out : Tensor());
        a.measure_target_runs(stats, k, how, ref_view, absmax, iso_out, target.outputs, sample_, keep, reused, &cues);
        if (how == IsolatedRun::Deferred) {
          if (a.options.isolated == IsolatedPass::Suspects && a.suspect(node, stats, k, cues)) {
            iso_out = a.run_isolated(a.session, i, k, *target.reference_as_read, absmax);
            a.measure_isolated(stats, k, ref_view, absmax, iso_out, sample_, cues);
            how = IsolatedRun::Run;
          } else {
            ++stats.targets[a.target_name(k)].isolated_skipped;
          }
        }
        a.trace_outputs(i, k, how, ref_view, iso_out, cues);
      }
      a.note_sample_sqnr(node.outputs, cues);
      a.tracer->release(a.session.release_after(i));
      for (const auto& name : a.session.release_after(i)) {
        figures_.erase(name);
        for (auto& values : a.sample_sqnr) values.erase(name);
      }
      reference_watch_.reset();
      target_watch_.reset();
      if (on_node_) on_node_(i);
    }

   private:
    Impl& audit_;
    int64_t sample_;
    const std::function<void(size_t)>& on_node_;
    std::unordered_map<std::string, OutputFigures> figures_;  // of values in figures_reused, until released
    std::unique_ptr<ReferenceWatch> reference_watch_;         // the running node's, when it has subgraphs
    std::unique_ptr<PropagatedWatch> target_watch_;
  };

  TensorMap run_sample(const TensorMap& feeds, int64_t sample, const std::function<void(size_t)>& on_node,
                       RunRecord* reference_record) {
    session.check_feeds(feeds);
    tracer->begin_sample();
    sample_sqnr.assign(options.targets.size(), {});
    measure_graph_inputs(feeds, sample);
    SampleRun run(*this, sample, on_node);
    plans[0].record = reference_record;
    std::vector<TensorMap> outputs = session.run_streams(feeds, plans, &run);
    plans[0].record = nullptr;
    merge_traces();
    return std::move(outputs.at(0));
  }
};

Auditor::Auditor(std::shared_ptr<const Graph> graph, AuditOptions options)
    : impl_(std::make_unique<Impl>(std::move(graph), std::move(options))) {}
Auditor::~Auditor() = default;

TensorMap Auditor::observe(const TensorMap& feeds, int64_t sample_index, const std::function<void(size_t)>& on_node,
                           RunRecord* reference_record) {
  return impl_->run_sample(feeds, sample_index, on_node, reference_record);
}

size_t Auditor::node_count() const { return impl_->graph->nodes.size(); }

Auditor::TimeSplit Auditor::time_split() const { return impl_->time; }

void Auditor::fill(report::Report& report) const {
  report.config.keep_fp32 = impl_->options.keep_fp32;
  std::sort(report.config.keep_fp32.begin(), report.config.keep_fp32.end());
  report.config.keep_fp32.erase(std::unique(report.config.keep_fp32.begin(), report.config.keep_fp32.end()),
                                report.config.keep_fp32.end());
  report.config.backend = impl_->options.device;
  if (const Backend& device = impl_->session.requested_backend(); &device != &host_backend()) {
    report::Config::Device record{device.describe(), {}};
    const auto note = [&](const std::string& run, const ExecConfig& config) {
      for (const auto& [what, how] : device.numerics(config)) record.numerics[run][what] = how;
    };
    note("reference", impl_->reference_config);
    for (size_t k = 0; k < impl_->target_configs.size(); ++k)
      note(std::string(format_name(impl_->options.targets[k])), impl_->target_configs[k]);
    report.config.device = std::move(record);
  }
  report.config.isolated = isolated_pass_name(impl_->options.isolated);
  const Transfers moved = impl_->session.transfers();
  report.transfers = {moved.uploads, moved.downloads, moved.bytes_uploaded, moved.bytes_downloaded};
  report.nodes = impl_->nodes;
  report.inputs = impl_->graph_inputs.tensors;
  std::vector<std::string> outputs;
  for (const auto& o : impl_->graph->outputs) outputs.push_back(o.name);
  evaluate(report, outputs);
}

}  // namespace mpa
