#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <functional>
#include <thread>

#include "cli/arg_groups.h"
#include "cli/commands.h"
#include "fix/presets.h"
#include "io/inputs.h"
#include "io/npy.h"
#include "model/loader.h"
#include "runtime/session.h"

namespace mpa::cli {

namespace {

struct RunOptions {
  std::string model;
  InputOptions inputs;
  std::string save_outputs, save_inputs;
  int threads = 0;
  std::string device = "cpu";
  int repeat = 0;
  std::string precision = "fp32", accumulation = "fp32", profile = "generic";
  std::vector<std::string> keep_fp32;       // node names
  std::vector<std::string> keep_fp32_ops;   // op types
  std::string keep_fp32_preset;
  std::vector<std::string> node_precision;  // NAME=FORMAT
  bool raw_format = false;
};

// An output in its storage format's own encoding: fp16 as numpy float16, bf16 as its raw 16 bits,
// fp8 as its 8-bit codes (onnx's float8 encodings). Formats without an encoding of their own stay float32.
Tensor encode_in_format(const Tensor& t, Format format) {
  if (t.dtype() != DType::Float32) return t;
  const float* in = t.data<float>();
  switch (format) {
    case Format::FP16: {
      Tensor out(DType::Float16, t.shape());
      floats_to_half(in, reinterpret_cast<uint16_t*>(out.raw()), t.numel());
      return out;
    }
    case Format::BF16: {
      Tensor out(DType::BFloat16, t.shape());
      floats_to_bfloat16(in, reinterpret_cast<uint16_t*>(out.raw()), t.numel());
      return out;
    }
    case Format::FP8E4M3FN:
    case Format::FP8E5M2: {
      Tensor out(DType::UInt8, t.shape());
      uint8_t* o = out.data<uint8_t>();
      for (int64_t i = 0; i < t.numel(); ++i)
        o[i] = format == Format::FP8E4M3FN ? float_to_fp8_e4m3fn(in[i]) : float_to_fp8_e5m2(in[i]);
      return out;
    }
    default: return t;
  }
}

double elapsed_ms(std::chrono::steady_clock::time_point since) {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - since).count();
}

// One line per output: type, shape, range, and the arg-max for small vectors (class scores).
void print_summary(const std::string& name, const Tensor& t) {
  std::printf("output %s: %s %s", name.c_str(), dtype_name(t.dtype()).c_str(), shape_str(t.shape()).c_str());
  if (t.numel() == 0) {
    std::printf(" (empty)\n");
    return;
  }
  const std::vector<double> v = t.to_double_vector();
  double lo = v[0], hi = v[0], sum = 0;
  size_t argmax = 0;
  for (size_t i = 0; i < v.size(); ++i) {
    lo = std::min(lo, v[i]);
    hi = std::max(hi, v[i]);
    sum += v[i];
    if (v[i] > v[argmax]) argmax = i;
  }
  std::printf("  min %.6g  max %.6g  mean %.6g", lo, hi, sum / static_cast<double>(v.size()));
  if (v.size() <= 1000) std::printf("  argmax %zu (%.6g)", argmax, v[argmax]);
  std::printf("\n");
}

// Writes each tensor as DIR/NAME.npy ('/', '\\', ':' and control bytes in names become '_'); names that
// would share a file are refused rather than written over each other.
void save_tensors(const std::string& dir, const TensorMap& tensors, const std::function<Tensor(const Tensor&)>& encode) {
  std::error_code ec;
  std::filesystem::create_directories(dir, ec);
  if (ec) fail(dir + ": cannot create the folder: " + ec.message());
  std::map<std::string, std::string> name_of_file;
  for (const auto& [name, tensor] : tensors) {
    std::string file = name;
    std::replace_if(file.begin(), file.end(), [](char c) { return c == '/' || c == '\\' || c == ':' || (c >= 0 && c < 0x20); }, '_');
    const auto [previous, fresh] = name_of_file.emplace(file, name);
    if (!fresh) fail("values '" + previous->second + "' and '" + name + "' would both be saved as " + file + ".npy");
  }
  for (const auto& [file, name] : name_of_file)
    write_npy(std::filesystem::path(dir) / (file + ".npy"), encode(tensors.at(name)));
}

// Adds the tensors of a sequence or optional graph output as --save-outputs writes them: a sequence's
// elements as NAME_0, NAME_1, ..., an optional's tensor as NAME (its sequence as a sequence's), nothing for
// an empty optional or an empty sequence.
void add_value_tensors(TensorMap& tensors, const std::string& name, const Value& value) {
  if (value.tensor.defined()) tensors.emplace(name, value.tensor);
  if (value.sequence) add_value_tensors(tensors, name, *value.sequence);
  for (size_t i = 0; i < value.elements.size(); ++i) tensors.emplace(name + "_" + std::to_string(i), value.elements[i]);
}

int run_model(const RunOptions& opt) {
  const auto load_start = std::chrono::steady_clock::now();
  const Model model = load_model(opt.model);
  SessionOptions session_options;
  session_options.threads = resolve_threads(opt.threads);
  session_options.device = opt.device;
  const auto precision = parse_format(opt.precision);
  if (!(precision.has_value()))
    fail("--precision '" + opt.precision + "': expected fp32, fp64, fp16, bf16, fp8e4m3, fp8e5m2 or tf32");
  session_options.precision = *precision;
  for (const std::string& name :
       fix::resolve_keep_set(*model.graph, opt.keep_fp32, opt.keep_fp32_ops, opt.keep_fp32_preset))
    session_options.node_precision[name] = Format::FP32;
  for (const std::string& spec : opt.node_precision) {
    const size_t eq = spec.rfind('=');
    const auto format = eq == std::string::npos ? std::nullopt : parse_format(spec.substr(eq + 1));
    if (!(format.has_value())) fail("--node-precision '" + spec + "': expected NODE=FORMAT, e.g. conv1=fp32");
    session_options.node_precision[spec.substr(0, eq)] = *format;
  }
  require(opt.accumulation == "fp32" || opt.accumulation == "fp16", "--accumulate must be fp32 or fp16");
  session_options.accumulation = opt.accumulation == "fp16" ? Accumulation::FP16 : Accumulation::FP32;
  require(opt.profile == "generic" || opt.profile == "ort-cuda", "--profile must be generic or ort-cuda");
  session_options.profile = opt.profile == "ort-cuda" ? RuntimeProfile::OrtCuda : RuntimeProfile::Generic;
  Session session(model.graph, session_options);
  const double load_ms = elapsed_ms(load_start);
  const TensorMap feeds = SampleSource(*model.graph, opt.inputs).sample(0);
  if (!opt.save_inputs.empty()) {
    save_tensors(opt.save_inputs, feeds, [](const Tensor& t) { return t; });
    std::printf("saved %zu inputs to %s\n", feeds.size(), opt.save_inputs.c_str());
  }

  TensorMap outputs;
  ValueMap values;  // sequence and optional outputs
  // Warm-up: first-touch allocations and thread start-up.
  if (opt.repeat > 0) outputs = session.run(feeds, {}, nullptr, nullptr, nullptr, &values);
  std::vector<double> times;
  for (int i = 0; i < std::max(1, opt.repeat); ++i) {
    const auto start = std::chrono::steady_clock::now();
    values.clear();
    outputs = session.run(feeds, {}, nullptr, nullptr, nullptr, &values);
    times.push_back(elapsed_ms(start));
  }
  for (const ValueInfo& out : model.graph->outputs) {
    auto value = values.find(out.name);
    if (value == values.end()) {
      print_summary(out.name, outputs.at(out.name));
      continue;
    }
    std::printf("output %s: %s\n", out.name.c_str(), value->second->describe().c_str());
    TensorMap parts;
    add_value_tensors(parts, out.name, *value->second);
    for (const auto& [name, t] : parts) print_summary(name, t);
    outputs.insert(parts.begin(), parts.end());
  }
  if (!opt.save_outputs.empty()) {
    save_tensors(opt.save_outputs, outputs,
                 [&](const Tensor& t) { return opt.raw_format ? encode_in_format(t, *precision) : t; });
    std::printf("saved %zu outputs to %s\n", outputs.size(), opt.save_outputs.c_str());
  }
  if (opt.repeat > 0) {
    std::vector<double> sorted = times;
    std::sort(sorted.begin(), sorted.end());
    const size_t n = sorted.size();
    const double median = n % 2 ? sorted[n / 2] : 0.5 * (sorted[n / 2 - 1] + sorted[n / 2]);
    std::printf("timing: load_ms=%.3f runs=%zu median_ms=%.3f min_ms=%.3f max_ms=%.3f\n", load_ms, n, median,
                sorted.front(), sorted.back());
  }
  return 0;
}

int run(const RunOptions& opt) {
  return naming_file(opt.model, [&] { return run_model(opt); });
}

}  // namespace

Action add_run(CLI::App& app) {
  auto opt = std::make_shared<RunOptions>();
  app.add_option("model", opt->model, "ONNX model file")->required();
  add_input_options(app, opt->inputs, false);
  app.add_option("--save-outputs", opt->save_outputs, "write each graph output as DIR/NAME.npy")->check(kNonEmptyPath);
  app.add_option("--save-inputs", opt->save_inputs,
                 "write each input as fed (after decoding and --preprocess) as DIR/NAME.npy, e.g. for another runtime")
      ->check(kNonEmptyPath);
  add_thread_option(app, opt->threads);
  add_device_option(app, opt->device);
  app.add_option("--precision", opt->precision, "fp32 (default), fp64, or an emulated format: fp16, bf16, fp8e4m3, fp8e5m2, tf32");
  add_keep_fp32_options(app, opt->keep_fp32, opt->keep_fp32_ops, opt->keep_fp32_preset, "when --precision is lower");
  app.add_option("--node-precision", opt->node_precision, "NODE=FORMAT: one node's storage format (repeatable)");
  app.add_option("--accumulate", opt->accumulation, "GEMM/Conv accumulation for low formats: fp32 (default) or fp16");
  app.add_option("--profile", opt->profile, "GPU runtime to emulate: generic (default) or ort-cuda");
  app.add_flag("--raw-format", opt->raw_format, "save outputs in the format's own encoding (fp16 as float16, bf16 as "
                                                "raw uint16, fp8 as uint8 codes) instead of float32");
  app.add_option("--repeat", opt->repeat,
                 "after one warm-up run, run N times and print load time and median/min/max run time")
      ->check(integer_in(0, 1'000'000));
  return [opt] { return run(*opt); };
}

}  // namespace mpa::cli
