// A WAV file as `--input NAME=FILE.wav` reads it, for a float [1, N] input.
#include "io/wav.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mpa::ValueInfo input = mpa::fuzz::declared_input("audio", 1, mpa::Shape{1, -1});
  mpa::fuzz::refusing_bad_input(
      [&] { mpa::audio_input(mpa::fuzz::as_string(data, size), input, {}, "input 'audio' (fuzz.wav)"); });
  return 0;
}
