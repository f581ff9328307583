// `mpaudit tensors`: audit dumped tensors (activations, gradients, weights, updates) against low-precision
// formats, recommend a loss scale and simulate dynamic loss scaling over a sequence of steps, and count
// the updates that vanish without FP32 master weights. Writes the JSON report, prints a short summary and
// exits 1 when a --fail-on gate fails (2 on bad input, as every command).
#include <algorithm>
#include <cstdio>

#include "backends/backend.h"
#include "cli/arg_groups.h"
#include "cli/commands.h"
#include "cli/progress.h"
#include "io/npy.h"
#include "tensors/tensors_report.h"

namespace mpa::cli {

namespace {

using tensors::TensorAudit;

struct TensorsArgs {
  tensors::TensorAuditOptions audit;
  std::vector<std::string> targets, master;
  std::string loss_scale_format = "fp16";
  double initial_scale = 65536, growth_factor = 2, backoff_factor = 0.5;
  std::string json_path;
  std::vector<std::string> fail_on;
  int threads = 0;
  bool quiet = false;
};

// The exponent of a power-of-two option value: scales stay powers of two so that flush counts are exact.
int power_of_two_exponent(double value, const std::string& option) {
  int exponent = 0;
  require(value > 0 && std::isfinite(value) && std::frexp(value, &exponent) == 0.5,
          option + " must be a power of two (e.g. 65536, 2, 0.5), not " + std::to_string(value));
  return exponent - 1;
}

Format parse_format_option(const std::string& text, const std::string& option) {
  const auto format = parse_format(text);
  require(format.has_value() && *format != Format::FP32 && *format != Format::FP64 && *format != Format::TF32,
          option + " '" + text + "': expected fp16, bf16, fp8e4m3 or fp8e5m2");
  return *format;
}

std::string percent(double fraction) {
  char text[32];
  std::snprintf(text, sizeof text, "%.3g %%", 100 * fraction);
  return text;
}

std::string window_text(const tensors::ScaleWindow& w) {
  if (w.empty) return "none";
  auto side = [](const std::optional<int>& e, const char* unbounded) {
    return e ? "2^" + std::to_string(*e) : std::string(unbounded);
  };
  return "[" + side(w.lo_log2, "0") + ", " + side(w.hi_log2, "inf") + "]";
}

void print_tensor_table(const TensorAudit& audit) {
  std::printf("%-36s %-8s %-8s %-14s %10s", "tensor", "role", "dtype", "shape", "absmax");
  for (Format f : audit.options.targets)
    std::printf("  %-9s %-9s %-19s", std::string(format_name(f)).c_str(), "flush", "scale window");
  std::printf("\n");
  for (const auto& step : audit.steps)
    for (const auto& t : step.tensors) {
      const std::string name = audit.steps.size() > 1 ? step.name + "/" + t.name : t.name;
      std::printf("%-36s %-8s %-8s %-14s", name.c_str(), tensors::role_name(t.role), dtype_name(t.stats.dtype).c_str(),
                  shape_str(t.stats.shape).c_str());
      if (!t.stats.floating) {
        std::printf(" %10s  (integer: no format figures)\n", "-");
        continue;
      }
      std::printf(" %10.4g", t.stats.range.absmax());
      for (const auto& f : t.stats.formats)
        std::printf(
            "  %-9s %-9s %-19s", f.fit.overflow > 0 ? "OVERFLOW" : "",
            percent(f.fit.nonzero ? static_cast<double>(f.fit.flush_to_zero) / static_cast<double>(f.fit.nonzero) : 0)
                .c_str(),
            window_text(f.window).c_str());
      std::printf("\n");
    }
}

// Per weight over all steps (a long run has a pair per weight and step): the share of its updates that
// vanish in each format, and the step where the most vanish in fp16.
void print_master_weights(const TensorAudit& audit) {
  struct Totals {
    std::string update, worst_step;
    int64_t updated = 0;
    std::vector<int64_t> vanished = std::vector<int64_t>(std::size(tensors::kMasterWeightFormats));
    double worst = -1;
  };
  std::vector<std::pair<std::string, Totals>> weights;  // first-seen order
  for (const auto& m : audit.master) {
    auto at = std::find_if(weights.begin(), weights.end(), [&](const auto& w) { return w.first == m.weight; });
    if (at == weights.end()) at = weights.insert(weights.end(), {m.weight, Totals{m.update, "", 0}});
    Totals& t = at->second;
    t.updated += m.figures.updated;
    for (size_t k = 0; k < t.vanished.size(); ++k) t.vanished[k] += m.figures.vanished[k];
    const double fp16 = m.figures.updated ? double(m.figures.vanished[0]) / double(m.figures.updated) : 0;
    if (fp16 > t.worst) {
      t.worst = fp16;
      t.worst_step = m.step;
    }
  }
  for (const auto& [weight, t] : weights) {
    std::printf("master weights %s + %s: %lld updated elements; vanish in", weight.c_str(), t.update.c_str(),
                static_cast<long long>(t.updated));
    for (size_t k = 0; k < t.vanished.size(); ++k)
      std::printf(" %s %s", std::string(format_name(tensors::kMasterWeightFormats[k])).c_str(),
                  percent(t.updated ? double(t.vanished[k]) / double(t.updated) : 0).c_str());
    if (audit.steps.size() > 1) std::printf(" (fp16 worst %s at %s)", percent(t.worst).c_str(), t.worst_step.c_str());
    std::printf("\n");
  }
}

void print_summary(const TensorAudit& audit) {
  int64_t count = 0;
  for (const auto& step : audit.steps) count += static_cast<int64_t>(step.tensors.size());
  std::printf("%zu step%s, %lld tensors (%lld gradients)\n", audit.steps.size(), audit.steps.size() == 1 ? "" : "s",
              static_cast<long long>(count), static_cast<long long>(audit.gradient_count));
  constexpr int64_t kTableRows = 60;
  if (count <= kTableRows)
    print_tensor_table(audit);
  else
    std::printf("(more than %lld tensors: the table is in the JSON report and `mpaudit view`)\n",
                static_cast<long long>(kTableRows));
  if (audit.gradient_count > 0) {
    const auto& s = audit.static_scale;
    const std::string format_text(format_name(audit.options.loss_scale.format));
    const char* format = format_text.c_str();
    if (s.scale_log2)
      std::printf(
          "static loss scale (%s): 2^%d, limited by %s; %.2f bits of headroom left, %s of gradient values flush; "
          "safe window %s%s\n",
          format, *s.scale_log2, s.limited_by.c_str(), s.headroom_bits, percent(s.flush_fraction).c_str(),
          window_text(s.window).c_str(), s.window.empty ? (" (" + s.window.reason + ")").c_str() : "");
    else
      std::printf("static loss scale (%s): none (%s)\n", format, s.reason.c_str());
    if (!s.nonfinite_gradients.empty())
      std::printf("  %zu gradient%s hold NaN/Inf (skipped at any scale), first %s\n", s.nonfinite_gradients.size(),
                  s.nonfinite_gradients.size() == 1 ? "" : "s", s.nonfinite_gradients.front().c_str());
    const auto& d = audit.dynamic_scale;
    const auto& o = audit.options.loss_scale;
    std::printf(
        "dynamic loss scale (initial 2^%d, x2^%d every %lld clean steps, x2^%d on overflow, hysteresis %d): "
        "%lld of %zu steps skipped, final scale 2^%d\n",
        o.initial_log2, o.growth_log2, static_cast<long long>(o.growth_interval), o.backoff_log2, o.hysteresis,
        static_cast<long long>(d.skipped), d.steps.size(), d.final_scale_log2);
    int shown = 0;
    for (const auto& step : d.steps)
      if (step.skipped && shown++ < 10)
        std::printf("  skip %s at 2^%d: %s\n", step.step.c_str(), step.scale_log2, step.reason.c_str());
  }
  print_master_weights(audit);
}

int run_tensors(TensorsArgs& args) {
  tensors::TensorAuditOptions& options = args.audit;
  if (!args.targets.empty()) {
    options.targets.clear();
    for (const std::string& t : args.targets) options.targets.push_back(parse_format_option(t, "--target"));
  }
  for (const std::string& m : args.master) options.master.push_back(tensors::MasterPairing::parse(m));
  if (options.learning_rate)
    require(std::isfinite(*options.learning_rate) && *options.learning_rate > 0, "--lr must be a positive number");
  require(!options.learning_rate || !options.master.empty(), "--lr needs --master (it turns gradients into updates)");
  options.loss_scale.format = parse_format_option(args.loss_scale_format, "--loss-scale-format");
  options.loss_scale.initial_log2 = power_of_two_exponent(args.initial_scale, "--init-scale");
  options.loss_scale.growth_log2 = power_of_two_exponent(args.growth_factor, "--growth-factor");
  options.loss_scale.backoff_log2 = power_of_two_exponent(args.backoff_factor, "--backoff-factor");
  require(options.loss_scale.growth_log2 >= 0, "--growth-factor must be at least 1");
  require(options.loss_scale.backoff_log2 <= 0, "--backoff-factor must be at most 1");
  tensors::check_tensor_gates(args.fail_on, options);
  if (!args.json_path.empty()) check_can_write(args.json_path);
  host_backend().use_threads(resolve_threads(args.threads));

  Progress bar(!args.quiet, "tensors", "tensors");
  const TensorAudit audit =
      tensors::run_tensor_audit(options, [&](int64_t done, int64_t total) { bar.show(done, total); });
  const std::vector<GateResult> gates = tensors::evaluate_tensor_gates(audit, args.fail_on);
  if (!args.json_path.empty())
    // Names come from files and archives: bytes that are not UTF-8 become U+FFFD rather than failing the write.
    write_file_atomic(args.json_path, tensors::tensors_report_json(audit, gates)
                                              .dump(1, ' ', false, nlohmann::ordered_json::error_handler_t::replace) +
                                          "\n");
  bool failed = false;
  for (const GateResult& g : gates) failed = failed || g.failed;
  if (!args.quiet) {
    print_summary(audit);
    for (const GateResult& g : gates)
      std::printf("gate %s: %s%s%s\n", g.expression.c_str(), g.failed ? "FAIL" : "pass", g.failed ? ": " : "",
                  g.detail.c_str());
  }
  return failed ? 1 : 0;
}

}  // namespace

Action add_tensors(CLI::App& app) {
  auto a = std::make_shared<TensorsArgs>();
  app.add_option("paths", a->audit.paths,
                 "tensor files (.npy .npz .pb .safetensors) or folders of them; a folder of folders is a sequence of "
                 "steps (one subfolder each, in natural name order)")
      ->required();
  app.add_option("--target", a->targets,
                 "format to check: fp16, bf16, fp8e4m3, fp8e5m2 (repeatable; default all four)");
  app.add_option("--max-flush", a->audit.max_flush_fraction,
                 "the fraction of nonzero values allowed to flush to zero inside a scale window (default 0.001)");
  app.add_option("--grads", a->audit.gradient_patterns,
                 "glob naming the gradients (repeatable; default: every floating tensor that is not a --master "
                 "weight or update)");
  app.add_option("--master", a->master,
                 "WEIGHTS=UPDATES globs with one '*' each, e.g. 'weight/*=update/*': count the updates that vanish in "
                 "fp16/bf16 weights (repeatable)");
  app.add_option("--lr", a->audit.learning_rate,
                 "with --master: the update side holds gradients, the update is -lr * g");
  app.add_option("--loss-scale-format", a->loss_scale_format,
                 "format the scaled gradients are computed in (default fp16)");
  app.add_option("--init-scale", a->initial_scale, "dynamic loss scaling: initial scale (default 65536, GradScaler's)");
  app.add_option("--growth-factor", a->growth_factor, "dynamic loss scaling: growth factor (default 2)");
  app.add_option("--backoff-factor", a->backoff_factor, "dynamic loss scaling: backoff factor (default 0.5)");
  app.add_option("--growth-interval", a->audit.loss_scale.growth_interval,
                 "dynamic loss scaling: clean steps before the scale grows (default 2000)")
      ->check(integer_in(1, int64_t{1} << 40));
  app.add_option("--hysteresis", a->audit.loss_scale.hysteresis,
                 "dynamic loss scaling: overflows tolerated before backing off, as DeepSpeed's (default 1: GradScaler)")
      ->check(integer_in(1, 1 << 20));
  app.add_option("--json", a->json_path, "write the JSON report here (atomically)")->check(kNonEmptyPath);
  app.add_option("--fail-on", a->fail_on,
                 "gate, e.g. 'fp16.flush_to_zero_frac>0.01', 'skipped_steps>0', 'fp16.vanished_frac>0.5' (repeatable)");
  add_thread_option(app, a->threads);
  app.add_flag("--quiet", a->quiet, "no progress and no summary; the exit code still tells");
  return [a] { return run_tensors(*a); };
}

}  // namespace mpa::cli
