// `--preprocess NAME:OPTIONS` as the CLI parses it, then applied to a 2x2 image and to an 8-frame WAV file
// for inputs that fix no size, so that the sizes, windows and values it sets are all used.
#include "io/image.h"
#include "io/preprocess.h"
#include "io/wav.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// 16-bit PCM, mono, 16 kHz, 8 frames.
std::string tiny_wav() {
  std::string wav;
  auto little_endian = [&](uint32_t value, int bytes) {
    for (int i = 0; i < bytes; ++i) wav += static_cast<char>(value >> (8 * i));
  };
  const uint32_t frames = 8;
  wav += "RIFF";
  little_endian(36 + 2 * frames, 4);
  wav += "WAVEfmt ";
  // Its size, PCM, 1 channel, 16 kHz, bytes per second, bytes per frame, bits per sample.
  const std::pair<uint32_t, int> format[] = {{16, 4}, {1, 2}, {1, 2}, {16000, 4}, {32000, 4}, {2, 2}, {16, 2}};
  for (const auto& [value, bytes] : format) little_endian(value, bytes);
  wav += "data";
  little_endian(2 * frames, 4);
  for (uint32_t i = 0; i < frames; ++i) little_endian(i * 4000, 2);
  return wav;
}

// A resize within the limit is legitimate work, only slow under ASan (seconds per million pixels): what is
// fuzzed is that a larger one is refused before anything is allocated.
bool large_but_allowed(const mpa::Preprocess& options) {
  if (!options.resize) return false;
  const double pixels = static_cast<double>(options.resize->first) * static_cast<double>(options.resize->second);
  return pixels > (1 << 20) && pixels <= static_cast<double>(mpa::kMaxImagePixels);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string ppm = std::string("P6\n2 2\n255\n") + std::string(12, '\x80'), wav = tiny_wav();
  static const mpa::ValueInfo image = mpa::fuzz::declared_input("image", 1),
                              audio = mpa::fuzz::declared_input("audio", 1);
  mpa::fuzz::refusing_bad_input([&] {
    const mpa::Preprocess options = mpa::parse_preprocess(mpa::fuzz::as_string(data, size), "--preprocess x");
    if (!large_but_allowed(options))
      mpa::fuzz::refusing_bad_input([&] { mpa::image_input(ppm, image, options, "input 'image' (fuzz.ppm)"); });
    mpa::fuzz::refusing_bad_input([&] { mpa::audio_input(wav, audio, options, "input 'audio' (fuzz.wav)"); });
  });
  return 0;
}
