// Audio inputs: RIFF/WAVE files with PCM (16, 24, 32 bit) or IEEE float32 samples, mono or interleaved
// multi-channel, read as float32 (PCM scaled to [-1, 1) as torchaudio and soundfile do) and shaped for a model input.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/preprocess.h"
#include "model/graph.h"
#include "tensor/tensor.h"

namespace mpa {

struct Audio {
  int64_t sample_rate = 0, channels = 0, frames = 0;
  std::vector<float> samples;  // interleaved: frame-major, channels * frames values
};

// Parses a WAV file's bytes; `what` names the source in messages.
Audio parse_wav(const std::string& bytes, const std::string& what);

// The tensor for model input `declared`: channels averaged with `mono`, resampled to `rate`, frames
// [offset, offset+length) at that rate, multiplied by `scale`, laid out [..., C, N] (leading dims 1), or [..., N, C]
// when the declared last dim is the channel count and the one before it is not. Float inputs only.
Tensor audio_input(const std::string& bytes, const ValueInfo& declared, const Preprocess& options, const std::string& what);

}  // namespace mpa
