// `--preprocess NAME:KEY=VALUE,...` options for inputs read from images and WAV files, parsed once and
// checked against the kind of file they are applied to (an image key on a WAV input is an error, not a no-op).
#pragma once
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "model/graph.h"

namespace mpa {

struct Preprocess {
  // Images.
  enum class Layout { Auto, NCHW, NHWC };
  enum class Channels { Auto, RGB, BGR, Gray };
  std::optional<std::pair<int64_t, int64_t>> resize;  // height, width
  Layout layout = Layout::Auto;                       // Auto: from the declared shape (NCHW when unclear)
  Channels channels = Channels::Auto;                 // Auto: RGB, or gray for 1-channel inputs
  double scale = 1;                                   // (pixel * scale - mean[c]) / std[c]; audio sample * scale
  std::vector<double> mean, std;                      // one value, or one per channel
  // Audio.
  int64_t offset = 0;                                 // first frame taken
  std::optional<int64_t> length;                      // frames taken (default: to the end)
  bool mono = false;                                  // average the channels
  std::optional<int64_t> rate;                        // resample to this rate (Hz) before the window is taken
  // The keys given, so that options which do not fit the file type are reported.
  std::set<std::string> keys;
};

// Parses "resize=224x224,layout=nchw,scale=1/255,mean=0.485/0.456/0.406,std=0.229/0.224/0.225,bgr" or
// "rate=16000,offset=0,length=512,mono,scale=32768".
// `what` names the option in messages.
Preprocess parse_preprocess(const std::string& text, const std::string& what);

// Keys that apply to images / to audio.
inline const std::set<std::string>& image_preprocess_keys() {
  static const std::set<std::string> keys{"resize", "layout", "rgb", "bgr", "gray", "scale", "mean", "std"};
  return keys;
}
inline const std::set<std::string>& audio_preprocess_keys() {
  static const std::set<std::string> keys{"offset", "length", "mono", "scale", "rate"};
  return keys;
}


}  // namespace mpa
