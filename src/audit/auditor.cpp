#include "audit/auditor.h"

#include <chrono>
#include <unordered_map>

#include "audit/rounding_commutes.h"
#include "audit/verdict.h"
#include "probes/fast_paths.h"
#include "probes/nvtx_range.h"
#include "runtime/precision.h"

namespace mpa {

std::string accumulation_name(Accumulation a) { return a == Accumulation::FP16 ? "fp16" : "fp32"; }
std::string profile_name(RuntimeProfile p) { return p == RuntimeProfile::OrtCuda ? "ort-cuda" : "generic"; }

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

using ValueMap = std::unordered_map<std::string, Tensor>;

SessionOptions session_options(int threads) {
  SessionOptions o;
  o.threads = threads;
  return o;
}

bool is_float(DType t) { return dtype_is_float(t); }

// TF32 is a math mode, not a storage format: tensors stay FP32, GEMM/Conv operands are rounded.
Format storage_of(Format target) { return target == Format::TF32 ? Format::FP32 : target; }

// One stream of values (reference, or a target's propagated run) with its converted initializers.
struct Stream {
  ValueMap values;
  const std::map<std::string, Tensor>* initializers = nullptr;
  const Tensor* find(const std::string& name) const {
    auto it = values.find(name);
    if (it != values.end()) return &it->second;
    auto init = initializers->find(name);
    return init == initializers->end() ? nullptr : &init->second;
  }
  std::vector<const Tensor*> inputs_of(const Node& node) const {
    std::vector<const Tensor*> out;
    for (const auto& name : node.inputs) {
      const Tensor* t = name.empty() ? nullptr : find(name);
      if (!name.empty() && !t) fail(node.label() + ": input '" + name + "' has no value");
      out.push_back(t);
    }
    return out;
  }
};

}  // namespace

struct Auditor::Impl {
  std::shared_ptr<const Graph> graph;
  AuditOptions options;
  Session session;
  ExecConfig reference_config;
  std::vector<ExecConfig> target_configs;
  std::map<std::string, Tensor> reference_initializers;
  std::vector<std::map<std::string, Tensor>> target_initializers;
  std::vector<report::NodeStats> nodes;
  std::vector<probes::Divergence::Params> divergence_params;
  bool observed = false;
  Auditor::TimeSplit time;

  Impl(std::shared_ptr<const Graph> g, AuditOptions o)
      : graph(std::move(g)), options(std::move(o)), session(graph, session_options(options.threads)) {
    require(options.reference == Format::FP32 || options.reference == Format::FP64, "the reference must be fp32 or fp64");
    require(!options.targets.empty(), "no target format to audit");
    reference_config = session.default_config();
    reference_config.storage = options.reference;
    for (const auto& [name, t] : graph->initializers)
      reference_initializers.emplace(name, options.reference == Format::FP64 ? widen_to_double(t) : t);
    for (Format target : options.targets) {
      ExecConfig c = session.default_config();
      c.storage = storage_of(target);
      c.accumulation = options.accumulation;
      c.tf32_gemm_inputs = target == Format::TF32;
      c.profile = options.profile;
      target_configs.push_back(c);
      std::map<std::string, Tensor> converted;  // once per format, not per sample
      for (const auto& [name, t] : graph->initializers)
        converted.emplace(name, tensor_in_format(t, c.storage, scale_of(target_configs.size() - 1, t)));
      target_initializers.push_back(std::move(converted));
      divergence_params.emplace_back(storage_of(target), options.thresholds.tolerances);
    }
    build_skeleton();
  }

  std::string target_name(size_t k) const { return std::string(format_name(options.targets[k])); }

  bool scaled(size_t k) const {
    const Format f = options.targets[k];
    return options.fp8_absmax_scaling && (f == Format::FP8E4M3FN || f == Format::FP8E5M2);
  }
  // The per-tensor scale of target k for a tensor whose reference absmax is given (1 when unscaled).
  double scale_for(size_t k, double absmax) const { return scaled(k) ? absmax_scale(options.targets[k], absmax) : 1.0; }
  // The same from the tensor itself (feeds, initializers), computing its absmax only when scaled.
  double scale_of(size_t k, const Tensor& t) const { return scaled(k) ? scale_for(k, absmax_of(t)) : 1.0; }

  void build_skeleton() {
    for (size_t i = 0; i < graph->nodes.size(); ++i) {
      const Node& node = graph->nodes[i];
      report::NodeStats stats;
      stats.index = static_cast<int64_t>(i);
      stats.name = node.name;
      stats.op_type = node.domain.empty() ? node.op_type : node.domain + "." + node.op_type;
      stats.inputs = node.inputs;
      stats.outputs = node.outputs;
      for (const auto& name : node.inputs) {
        auto it = graph->initializers.find(name);
        if (name.empty() || it == graph->initializers.end() || !is_float(it->second.dtype())) continue;
        report::WeightStats w;
        w.name = name;
        w.count = it->second.numel();
        for (size_t k = 0; k < options.targets.size(); ++k)
          w.targets[target_name(k)] =
              probes::FormatFit::of(it->second, storage_of(options.targets[k]), scale_of(k, it->second));
        stats.weights.push_back(std::move(w));
      }
      for (size_t k = 0; k < options.targets.size(); ++k) stats.targets[target_name(k)] = {};
      nodes.push_back(std::move(stats));
    }
  }

  // Reference statistics of one output: range, histogram and format fit for every target, one pass.
  // Returns this sample's absmax of the tensor.
  double observe_reference(report::TensorStats& stats, const Tensor& ref) {
    std::vector<probes::FormatFit::Bounds> bounds;
    for (Format f : options.targets) bounds.emplace_back(storage_of(f));
    struct Chunk {
      probes::RangeProbe::Chunk range;
      probes::ExpHistogram::Chunk hist;
      std::vector<probes::FormatFit::Chunk> fits;
    };
    probes::RangeProbe range;
    probes::ExpHistogram hist;
    std::vector<probes::FormatFit> fits(bounds.size());
    probes::chunked<Chunk>(
        ref.numel(),
        [&](int64_t begin, int64_t end) {
          Chunk c;
          c.fits.resize(bounds.size());
          if (ref.dtype() == DType::Float32) {
            const float* x = ref.data<float>() + begin;
            probes::fast::range(x, end - begin, c.range);
            if (std::isfinite(c.range.sum_sq)) {  // every value finite (probes/fast_paths.h)
              probes::fast::histogram(x, end - begin, c.hist);
              for (size_t k = 0; k < bounds.size(); ++k) probes::fast::format_fit(x, end - begin, bounds[k], c.fits[k]);
              return c;
            }
            c.range = {};
          }
          probes::for_each_value(ref, begin, end, [&](double x, int64_t) {
            c.range.add(x);
            c.hist.add(x);
            for (size_t k = 0; k < bounds.size(); ++k) c.fits[k].add(x, bounds[k]);
          });
          return c;
        },
        [&](const Chunk& c) {
          range.absorb(c.range);
          hist.absorb(c.hist);
          for (size_t k = 0; k < fits.size(); ++k) fits[k].absorb(c.fits[k]);
        });
    for (size_t k = 0; k < fits.size(); ++k) {
      const double scale = scale_for(k, range.absmax());
      if (scale != 1) fits[k] = probes::FormatFit::of(ref, storage_of(options.targets[k]), scale);
      else if (fits[k].flush_to_zero > 0)
        fits[k].significant_flush =
            probes::FormatFit::count_significant_flushes(ref, storage_of(options.targets[k]), range.absmax());
    }
    stats.range.merge(range);
    stats.hist.merge(hist);
    for (size_t k = 0; k < fits.size(); ++k) stats.targets[target_name(k)].fit.merge(fits[k]);
    return range.absmax();
  }

  void run_sample(const TensorMap& feeds, int64_t sample, const std::function<void(size_t)>& on_node) {
    session.check_feeds(feeds);
    const size_t targets = options.targets.size();
    Stream reference;
    reference.initializers = &reference_initializers;
    for (const auto& [name, t] : feeds)
      reference.values[name] = options.reference == Format::FP64 ? widen_to_double(t) : t;
    std::vector<Stream> propagated(targets);
    // Isolated inputs: reference values converted to each target format, cached until their last reader.
    std::vector<ValueMap> isolated_inputs(targets);
    for (size_t k = 0; k < targets; ++k) {
      propagated[k].initializers = &target_initializers[k];
      for (const auto& [name, t] : feeds)
        propagated[k].values[name] = tensor_in_format(t, target_configs[k].storage, scale_of(k, t));
    }

    for (size_t i = 0; i < graph->nodes.size(); ++i) {
      const Node& node = graph->nodes[i];
      report::NodeStats& stats = nodes[i];
      probes::NvtxRange range(node.name.c_str());

      // Wall time only when asked for: it is the one figure that differs between runs, and without
      // --timing the report must be byte-identical for the same model, inputs and seed.
      const auto start = std::chrono::steady_clock::now();
      // Control-flow nodes read outer values by name inside their subgraphs: each stream serves its own.
      const bool reads_scope = !node.implicit_inputs.empty();
      const ScopeLookup reference_scope = [&](const std::string& name) { return reference.find(name); };
      std::vector<Tensor> ref_out = session.run_node(i, reference.inputs_of(node), reference_config,
                                                     reads_scope ? &reference_scope : nullptr);
      if (options.timing)
        stats.time_ms_total += std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
      if (options.reference == Format::FP64)
        for (Tensor& t : ref_out) t = t.defined() ? widen_to_double(t) : t;

      bool has_float = false;
      for (const Tensor& t : ref_out) has_float |= t.defined() && is_float(t.dtype());
      for (const auto& name : node.inputs) {
        const Tensor* t = name.empty() ? nullptr : reference.find(name);
        has_float |= t && is_float(t->dtype());
      }

      if (stats.tensors.empty())
        for (size_t o = 0; o < node.outputs.size(); ++o) {
          report::TensorStats ts;
          ts.name = node.outputs[o];
          if (ref_out[o].defined()) {
            ts.shape = ref_out[o].shape();
            ts.dtype = dtype_name(options.reference == Format::FP64 && ref_out[o].dtype() == DType::Float64
                                      ? DType::Float32
                                      : ref_out[o].dtype());
            ts.measured = is_float(ref_out[o].dtype());
          }
          for (size_t k = 0; k < targets; ++k) ts.targets[target_name(k)] = {};
          stats.tensors.push_back(std::move(ts));
        }
      std::vector<double> ref_absmax(ref_out.size(), 0.0);  // scales of scaled FP8 targets
      // Per target and output: the stored output's divergence, which is the isolated one where rounding
      // commutes with the op (unscaled targets: a scale is per tensor, so inputs and output differ).
      std::vector<std::vector<probes::Divergence>> stored_divergence(targets, std::vector<probes::Divergence>(ref_out.size()));
      for (size_t o = 0; o < ref_out.size(); ++o) {
        if (!stats.tensors[o].measured || !ref_out[o].defined()) continue;
        {
          ScopedSeconds probing(time.probes);
          ref_absmax[o] = observe_reference(stats.tensors[o], ref_out[o]);
        }
        // The output stored in each format: measured here, and kept as the isolated input of its consumers.
        for (size_t k = 0; k < targets; ++k) {
          Tensor stored;
          {
            ScopedSeconds converting(time.convert);
            stored = tensor_in_format(ref_out[o], target_configs[k].storage, scale_for(k, ref_absmax[o]));
          }
          ScopedSeconds probing(time.probes);
          stored_divergence[k][o] = probes::Divergence::of(ref_out[o], stored, divergence_params[k], sample);
          stats.tensors[o].targets[target_name(k)].stored.merge(stored_divergence[k][o]);
          if (!node.outputs[o].empty()) isolated_inputs[k][node.outputs[o]] = std::move(stored);
        }
      }

      for (size_t k = 0; k < targets; ++k) {
        const ExecConfig& config = target_configs[k];
        std::vector<Tensor> prop_out;
        {
          ScopedSeconds executing(time.execute);
          const ScopeLookup propagated_scope = [&](const std::string& name) { return propagated[k].find(name); };
          prop_out = session.run_node(i, propagated[k].inputs_of(node), config, reads_scope ? &propagated_scope : nullptr);
        }
        {
          ScopedSeconds converting(time.convert);
          for (size_t o = 0; o < prop_out.size(); ++o)
            if (prop_out[o].defined()) round_tensor_to_format(prop_out[o], config.storage, scale_for(k, ref_absmax[o]));
        }
        std::vector<Tensor> iso_out;
        const bool isolated_is_stored = has_float && !scaled(k) && rounding_commutes_with(node);
        if (has_float && !isolated_is_stored) {
          // A reference value stored in the target format: cached until its last reader.
          const ScopeLookup isolated_value = [&](const std::string& name) -> const Tensor* {
            auto cached = isolated_inputs[k].find(name);
            if (cached != isolated_inputs[k].end()) return &cached->second;
            auto init = target_initializers[k].find(name);
            if (!reference.values.count(name) && init != target_initializers[k].end()) return &init->second;
            const Tensor* value = reference.find(name);
            if (!value) return nullptr;
            ScopedSeconds converting(time.convert);
            return &isolated_inputs[k].emplace(name, tensor_in_format(*value, config.storage, scale_of(k, *value))).first->second;
          };
          std::vector<const Tensor*> iso_in;
          for (const auto& name : node.inputs) iso_in.push_back(name.empty() ? nullptr : isolated_value(name));
          {
            ScopedSeconds executing(time.execute);
            iso_out = session.run_node(i, std::move(iso_in), config, reads_scope ? &isolated_value : nullptr);
          }
          ScopedSeconds converting(time.convert);
          for (size_t o = 0; o < iso_out.size(); ++o)
            if (iso_out[o].defined()) round_tensor_to_format(iso_out[o], config.storage, scale_for(k, ref_absmax[o]));
        }
        const std::string fmt = target_name(k);
        ScopedSeconds probing(time.probes);
        for (size_t o = 0; o < ref_out.size(); ++o) {
          report::TensorStats& ts = stats.tensors[o];
          if (!ts.measured || !ref_out[o].defined() || !prop_out[o].defined()) continue;
          report::TensorTarget& tt = ts.targets[fmt];
          if (prop_out[o].numel() == ref_out[o].numel() && is_float(prop_out[o].dtype()))
            tt.propagated.merge(probes::Divergence::of(ref_out[o], prop_out[o], divergence_params[k], sample,
                                                       &tt.propagated_hist));
          if (isolated_is_stored)
            tt.isolated.merge(stored_divergence[k][o]);
          else if (!iso_out.empty() && iso_out[o].numel() == ref_out[o].numel() && is_float(iso_out[o].dtype()))
            tt.isolated.merge(probes::Divergence::of(ref_out[o], iso_out[o], divergence_params[k], sample));
        }
        for (size_t o = 0; o < node.outputs.size(); ++o)
          if (!node.outputs[o].empty()) propagated[k].values[node.outputs[o]] = std::move(prop_out[o]);
      }
      for (size_t o = 0; o < node.outputs.size(); ++o)
        if (!node.outputs[o].empty()) reference.values[node.outputs[o]] = std::move(ref_out[o]);
      for (const auto& name : session.release_after(i)) {
        reference.values.erase(name);
        for (size_t k = 0; k < targets; ++k) {
          propagated[k].values.erase(name);
          isolated_inputs[k].erase(name);
        }
      }
      if (on_node) on_node(i);
    }
    observed = true;
  }
};

Auditor::Auditor(std::shared_ptr<const Graph> graph, AuditOptions options)
    : impl_(std::make_unique<Impl>(std::move(graph), std::move(options))) {}
Auditor::~Auditor() = default;

void Auditor::observe(const TensorMap& feeds, int64_t sample_index, const std::function<void(size_t)>& on_node) {
  impl_->run_sample(feeds, sample_index, on_node);
}

size_t Auditor::node_count() const { return impl_->graph->nodes.size(); }

Auditor::TimeSplit Auditor::time_split() const { return impl_->time; }

void Auditor::fill(report::Report& report) const {
  report.nodes = impl_->nodes;
  std::vector<std::string> outputs;
  for (const auto& o : impl_->graph->outputs) outputs.push_back(o.name);
  evaluate(report, outputs);
}

}  // namespace mpa
