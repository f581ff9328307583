// Resampling of audio inputs to the rate a model takes (`--preprocess NAME:rate=HZ`), with libsamplerate.
#pragma once
#include <cstdint>
#include <string>

#include "io/wav.h"

namespace mpa {

// The bounds of resampling (README, Limits): rates in Hz, for `rate=` and for the file resampled, and the most
// samples (frames x channels) read or written, checked before anything is allocated so that a small file
// cannot ask for gigabytes (2^26 floats: 256 MiB, a minute or so of libsamplerate's best converter).
inline constexpr int64_t kMaxSampleRate = 768000;
inline constexpr int64_t kMaxResampledSamples = int64_t{1} << 26;
// The largest factor between the file's rate and `rate=`, either way. libsamplerate accepts 256, but its best
// converter (0.2.2) drops frames at the end when downsampling by more than about 220.
inline constexpr int64_t kMaxRateFactor = 128;

// `audio` at `rate` Hz: ceil(frames * rate / audio.sample_rate) frames (torchaudio's and librosa's length),
// aligned with the original (frame j at time j / rate). `what` names the source in messages.
Audio resample(const Audio& audio, int64_t rate, const std::string& what);

}  // namespace mpa
