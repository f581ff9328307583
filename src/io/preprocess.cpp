#include "io/preprocess.h"

#include <cmath>
#include <cstdlib>

#include "common/error.h"
#include "common/number_text.h"
#include "io/resample.h"

namespace mpa {

namespace {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  size_t pos = 0;
  while (true) {
    const size_t end = text.find(sep, pos);
    parts.push_back(text.substr(pos, end == std::string::npos ? std::string::npos : end - pos));
    if (end == std::string::npos) return parts;
    pos = end + 1;
  }
}

}  // namespace

Preprocess parse_preprocess(const std::string& text, const std::string& what) {
  Preprocess p;
  if (!(!text.empty())) fail(what + ": no options (expected e.g. resize=224x224,scale=1/255)");
  for (const std::string& item : split(text, ',')) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = eq == std::string::npos ? "" : item.substr(eq + 1);
    const bool is_flag = key == "rgb" || key == "bgr" || key == "gray" || key == "mono";
    if (!(image_preprocess_keys().count(key) || audio_preprocess_keys().count(key)))
      fail(what + ": unknown option '" + key + "' (images: resize=HxW, layout=nchw|nhwc, rgb, bgr, gray, scale=S, " +
           "mean=M[/M/M], std=S[/S/S]; audio: rate=HZ, offset=N, length=N, mono, scale=S)");
    if (!(is_flag ? eq == std::string::npos : !value.empty()))
      fail(what + ": " +
           (is_flag ? "'" + key + "' takes no value" : "'" + key + "' needs a value, e.g. " + key + "=..."));
    if (!(p.keys.insert(key).second || is_flag)) fail(what + ": '" + key + "' is given twice");
    const std::string bad = what + ": bad " + key + " '" + value + "'";
    if (key == "resize") {
      const auto hw = split(value, 'x');
      const int64_t h = hw.size() == 2 ? parse_count(hw[0]).value_or(0) : 0;
      const int64_t w = hw.size() == 2 ? parse_count(hw[1]).value_or(0) : 0;
      if (!(h > 0 && w > 0)) fail(bad + " (expected HEIGHTxWIDTH, e.g. 224x224)");
      p.resize = std::make_pair(h, w);
    } else if (key == "layout") {
      if (value == "nchw" || value == "NCHW") p.layout = Preprocess::Layout::NCHW;
      else if (value == "nhwc" || value == "NHWC") p.layout = Preprocess::Layout::NHWC;
      else fail(bad + " (expected nchw or nhwc)");
    } else if (key == "rgb" || key == "bgr" || key == "gray") {
      const auto order = key == "rgb" ? Preprocess::Channels::RGB : key == "bgr" ? Preprocess::Channels::BGR
                                                                                 : Preprocess::Channels::Gray;
      if (!(p.channels == Preprocess::Channels::Auto || p.channels == order))
        fail(what + ": rgb, bgr and gray exclude each other");
      p.channels = order;
    } else if (key == "scale") {
      // A fraction is accepted because the usual scales are 1/255, 1/127.5 and, for audio, 1/32768.
      const auto parts = split(value, '/');
      const auto num = parse_finite_number(parts[0]);
      const auto den = parts.size() == 2 ? parse_finite_number(parts[1]) : std::optional<double>(1.0);
      if (!(parts.size() <= 2 && num && den && *den != 0 && std::isfinite(*num / *den)))
        fail(bad + " (expected a finite number or a fraction, e.g. 1/255)");
      p.scale = *num / *den;
    } else if (key == "mean" || key == "std") {
      std::vector<double>& out = key == "mean" ? p.mean : p.std;
      for (const std::string& part : split(value, '/')) {
        const auto v = parse_finite_number(part);
        if (!(v.has_value())) fail(bad + " (expected one number or one per channel separated by '/')");
        if (!(key == "mean" || *v != 0)) fail(what + ": std must not be 0");
        out.push_back(*v);
      }
    } else if (key == "offset" || key == "length") {
      const auto n = parse_count(value);
      if (!(n.has_value() && (key == "offset" || *n > 0))) fail(bad + " (expected a frame count)");
      if (key == "offset") p.offset = *n;
      else p.length = *n;
    } else if (key == "rate") {
      const auto hz = parse_count(value);
      if (!(hz && *hz >= 1 && *hz <= kMaxSampleRate))
        fail(bad + " (expected a sample rate in Hz, 1 to " + std::to_string(kMaxSampleRate) + ")");
      p.rate = *hz;
    } else if (key == "mono") {
      p.mono = true;
    }
  }
  return p;
}

}  // namespace mpa
