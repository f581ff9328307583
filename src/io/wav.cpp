#include "io/wav.h"

#include <cstring>

#include "io/resample.h"
#include "tensor/dispatch.h"

namespace mpa {

namespace {

uint32_t le_u32(const std::string& b, size_t at) {
  return static_cast<uint32_t>(static_cast<unsigned char>(b[at])) | static_cast<uint32_t>(static_cast<unsigned char>(b[at + 1])) << 8 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[at + 2])) << 16 |
         static_cast<uint32_t>(static_cast<unsigned char>(b[at + 3])) << 24;
}
uint16_t le_u16(const std::string& b, size_t at) {
  return static_cast<uint16_t>(static_cast<unsigned char>(b[at]) | static_cast<unsigned char>(b[at + 1]) << 8);
}

std::string encoding_name(uint16_t tag, uint16_t bits) {
  switch (tag) {
    case 1: return std::to_string(bits) + "-bit PCM";
    case 2: return "MS ADPCM";
    case 3: return std::to_string(bits) + "-bit float";
    case 6: return "A-law";
    case 7: return "mu-law";
    case 0x11: return "IMA ADPCM";
    case 0x55: return "MP3";
    default: return "format tag " + std::to_string(tag);
  }
}

Audio mixed_to_mono(const Audio& audio) {
  Audio mono;
  mono.sample_rate = audio.sample_rate, mono.channels = 1, mono.frames = audio.frames;
  mono.samples.resize(static_cast<size_t>(audio.frames));
  for (int64_t f = 0; f < audio.frames; ++f) {
    double sum = 0;
    for (int64_t c = 0; c < audio.channels; ++c) sum += audio.samples[static_cast<size_t>(f * audio.channels + c)];
    mono.samples[static_cast<size_t>(f)] = static_cast<float>(sum / static_cast<double>(audio.channels));
  }
  return mono;
}

}  // namespace

Audio parse_wav(const std::string& b, const std::string& what) {
  if (!(b.size() >= 12 && b.compare(0, 4, "RIFF") == 0 && b.compare(8, 4, "WAVE") == 0))
    fail(what + ": not a WAV file (no RIFF/WAVE header)");
  bool have_fmt = false, have_data = false;
  uint16_t tag = 0, channels = 0, block_align = 0, bits = 0;
  uint32_t rate = 0;
  size_t data_at = 0, data_size = 0;
  // Chunks: 4-byte id, 4-byte little-endian size, body padded to an even size.
  for (size_t pos = 12; pos + 8 <= b.size();) {
    const std::string id = b.substr(pos, 4);
    const size_t size = le_u32(b, pos + 4), body = pos + 8;
    if (!(size <= b.size() - body)) fail(what + ": WAV chunk '" + id + "' runs past the end of the file (truncated?)");
    if (id == "fmt ") {
      if (!(size >= 16)) fail(what + ": WAV fmt chunk too short");
      tag = le_u16(b, body), channels = le_u16(b, body + 2), rate = le_u32(b, body + 4);
      block_align = le_u16(b, body + 12), bits = le_u16(b, body + 14);
      // WAVE_FORMAT_EXTENSIBLE: the encoding is the first two bytes of the subformat GUID.
      if (tag == 0xFFFE) {
        if (!(size >= 40)) fail(what + ": WAV extensible fmt chunk too short");
        tag = le_u16(b, body + 24);
      }
      have_fmt = true;
    } else if (id == "data" && !have_data) {
      data_at = body, data_size = size, have_data = true;
    }
    pos = body + size + (size & 1);
  }
  if (!(have_fmt)) fail(what + ": WAV file has no fmt chunk");
  if (!(have_data)) fail(what + ": WAV file has no data chunk");
  const bool supported = (tag == 1 && (bits == 16 || bits == 24 || bits == 32)) || (tag == 3 && bits == 32);
  if (!(supported))
    fail(what + ": WAV encoding " + encoding_name(tag, bits) +
         " is not supported (use 16/24/32-bit PCM or 32-bit float)");
  if (!(channels >= 1)) fail(what + ": WAV file declares 0 channels");
  if (!(block_align == channels * (bits / 8)))
    fail(what + ": WAV block align " + std::to_string(block_align) + " does not match " + std::to_string(channels) +
         " channels of " + std::to_string(bits) + " bits");
  if (!(data_size % block_align == 0)) fail(what + ": WAV data is not a whole number of frames (truncated?)");
  Audio audio;
  audio.sample_rate = rate, audio.channels = channels;
  audio.frames = static_cast<int64_t>(data_size / block_align);
  const size_t count = data_size / (bits / 8);
  audio.samples.resize(count);
  const char* p = b.data() + data_at;
  for (size_t i = 0; i < count; ++i) {
    float v = 0;
    if (tag == 3) {
      std::memcpy(&v, p + 4 * i, 4);
    } else if (bits == 16) {
      v = static_cast<float>(static_cast<int16_t>(le_u16(b, data_at + 2 * i))) * 0x1p-15f;
    } else if (bits == 24) {
      // Sign-extend the 3 bytes by placing them in the top of an int32.
      const uint32_t u = static_cast<uint32_t>(static_cast<unsigned char>(p[3 * i])) << 8 |
                         static_cast<uint32_t>(static_cast<unsigned char>(p[3 * i + 1])) << 16 |
                         static_cast<uint32_t>(static_cast<unsigned char>(p[3 * i + 2])) << 24;
      v = static_cast<float>(static_cast<double>(static_cast<int32_t>(u)) * 0x1p-31);
    } else {
      v = static_cast<float>(static_cast<double>(static_cast<int32_t>(le_u32(b, data_at + 4 * i))) * 0x1p-31);
    }
    audio.samples[i] = v;
  }
  return audio;
}

Tensor audio_input(const std::string& bytes, const ValueInfo& declared, const Preprocess& opt, const std::string& what) {
  for (const std::string& key : opt.keys)
    if (!(audio_preprocess_keys().count(key)))
      fail(what + ": --preprocess " + key + " applies to images, not to audio");
  const DType dtype = declared.elem_type == 0 ? DType::Float32 : static_cast<DType>(declared.elem_type);
  if (!(dtype_is_float(dtype)))
    fail(what + ": the model declares " + onnx_type_name(declared.elem_type) + "; audio fills float inputs");
  Audio audio = parse_wav(bytes, what);
  const int64_t file_channels = audio.channels;
  // Channels are averaged before resampling: the same signal for a fraction of libsamplerate's work.
  if (opt.mono && audio.channels > 1) audio = mixed_to_mono(audio);
  if (opt.rate && *opt.rate != audio.sample_rate) audio = resample(audio, *opt.rate, what);
  // The window counts frames at the rate the model sees.
  const std::string file_frames = std::to_string(audio.frames) + " frames" +
                                  (opt.rate ? " at " + std::to_string(audio.sample_rate) + " Hz" : std::string());
  if (!(opt.offset <= audio.frames))
    fail(what + ": offset " + std::to_string(opt.offset) + " is past the end (" + file_frames + ")");
  const int64_t frames = opt.length.value_or(audio.frames - opt.offset);
  if (!(frames <= audio.frames - opt.offset))
    fail(what + ": length " + std::to_string(frames) + " from offset " + std::to_string(opt.offset) +
         " runs past the end (" + file_frames + ")");
  if (!(frames > 0)) fail(what + ": no audio frames to read");
  const int64_t channels = audio.channels;

  const Shape dims = declared.has_shape ? declared.dims : Shape{-1, -1};
  const int rank = static_cast<int>(dims.size());
  if (!(rank >= 1)) fail(what + ": audio fills inputs of rank 1 or more; the model declares a scalar");
  if (!(rank >= 2 || channels == 1))
    fail(what + ": the model takes one channel (" + declared_shape_str(declared) + ") and the file has " +
         std::to_string(file_channels) + ": add --preprocess " + declared.name + ":mono");
  const bool time_major = rank >= 2 && dims[rank - 1] == channels && dims[rank - 2] != channels;
  const int time_axis = time_major ? rank - 2 : rank - 1;
  const int channel_axis = rank < 2 ? -1 : time_major ? rank - 1 : rank - 2;
  if (!(dims[time_axis] < 0 || dims[time_axis] == frames))
    fail(what + ": the model takes " + std::to_string(dims[time_axis]) + " frames (" + declared_shape_str(declared) +
         ") and " + std::to_string(frames) + " are read: choose a window with --preprocess " + declared.name +
         ":offset=N,length=" + std::to_string(dims[time_axis]));
  if (!(channel_axis < 0 || dims[channel_axis] < 0 || dims[channel_axis] == channels))
    fail(what + ": the model takes " + std::to_string(dims[channel_axis]) + " channels (" +
         declared_shape_str(declared) + ") and the file has " + std::to_string(file_channels) +
         (dims[channel_axis] == 1 ? ": add --preprocess " + declared.name + ":mono" : ""));
  Shape shape(static_cast<size_t>(rank), 1);
  shape[time_axis] = frames;
  if (channel_axis >= 0) shape[channel_axis] = channels;

  // Gather the window as [C, N] (or [N, C]) floats; scale 1 leaves every sample as it is.
  std::vector<float> values(static_cast<size_t>(frames * channels));
  for (int64_t f = 0; f < frames; ++f) {
    const float* frame = audio.samples.data() + (opt.offset + f) * channels;
    for (int64_t c = 0; c < channels; ++c)
      values[static_cast<size_t>(time_major ? f * channels + c : c * frames + f)] =
          static_cast<float>(static_cast<double>(frame[c]) * opt.scale);
  }
  Tensor t(dtype, shape);
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_floating_point_v<compute_t<T>>) {
      T* out = t.data<T>();
      for (size_t i = 0; i < values.size(); ++i) out[i] = store<T>(static_cast<compute_t<T>>(values[i]));
    }
  });
  return t;
}

}  // namespace mpa
