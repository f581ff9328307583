// Writes small image and WAV files byte by byte in tests, so every test file is made by code here:
// BMP and WAV by hand, PNG and JPEG through stb_image_write (libstb, independent of the stb_image decoder),
// PNGs with image data no writer makes (interlaced, corrupt streams) chunk by chunk with zlib.
#pragma once
#include <stb_image_write.h>
#include <zlib.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

namespace mpa::test {

inline void put_u16(std::string& s, uint32_t v) {
  s += static_cast<char>(v & 0xFF);
  s += static_cast<char>((v >> 8) & 0xFF);
}
inline void put_u32(std::string& s, uint32_t v) {
  put_u16(s, v & 0xFFFF);
  put_u16(s, v >> 16);
}

// An uncompressed 24-bit BMP (bottom-up rows, BGR, rows padded to 4 bytes) of `rgb` (HWC, 3 channels).
inline std::string bmp_bytes(int width, int height, const std::vector<uint8_t>& rgb) {
  const uint32_t row = static_cast<uint32_t>((width * 3 + 3) / 4 * 4);
  std::string s = "BM";
  put_u32(s, 54 + row * static_cast<uint32_t>(height));
  put_u32(s, 0);
  put_u32(s, 54);
  put_u32(s, 40);
  put_u32(s, static_cast<uint32_t>(width));
  put_u32(s, static_cast<uint32_t>(height));
  put_u16(s, 1);
  put_u16(s, 24);
  for (int i = 0; i < 6; ++i) put_u32(s, 0);
  for (int y = height - 1; y >= 0; --y) {
    std::string line;
    for (int x = 0; x < width; ++x) {
      const size_t p = static_cast<size_t>((y * width + x) * 3);
      line += static_cast<char>(rgb[p + 2]);
      line += static_cast<char>(rgb[p + 1]);
      line += static_cast<char>(rgb[p]);
    }
    line.resize(row, '\0');
    s += line;
  }
  return s;
}

inline void append_to_string(void* context, void* data, int size) {
  static_cast<std::string*>(context)->append(static_cast<const char*>(data), static_cast<size_t>(size));
}

// A PNG (lossless) or a JPEG (quality 95) of `pixels` (HWC, `channels` 1, 3 or 4).
inline std::string png_bytes(int width, int height, int channels, const std::vector<uint8_t>& pixels) {
  std::string s;
  stbi_write_png_to_func(append_to_string, &s, width, height, channels, pixels.data(), width * channels);
  return s;
}
inline std::string jpg_bytes(int width, int height, int channels, const std::vector<uint8_t>& pixels) {
  std::string s;
  stbi_write_jpg_to_func(append_to_string, &s, width, height, channels, pixels.data(), 95);
  return s;
}

inline std::string zlib_compressed(const std::string& raw) {
  uLongf size = compressBound(static_cast<uLong>(raw.size()));
  std::string out(size, '\0');
  compress(reinterpret_cast<Bytef*>(out.data()), &size, reinterpret_cast<const Bytef*>(raw.data()),
           static_cast<uLong>(raw.size()));
  out.resize(size);
  return out;
}

// A PNG of the given header (8-bit RGB unless said) whose one IDAT chunk holds `idat` as is.
inline std::string png_with_idat(uint32_t width, uint32_t height, const std::string& idat, bool adam7 = false,
                                 uint8_t depth = 8, uint8_t colour = 2) {
  const auto chunk = [](const std::string& type, const std::string& data) {
    std::string c;
    for (uint32_t v : {static_cast<uint32_t>(data.size())})
      for (int shift = 24; shift >= 0; shift -= 8) c += static_cast<char>((v >> shift) & 0xFF);
    c += type + data;
    const uint32_t crc = crc32(crc32(0, reinterpret_cast<const Bytef*>(type.data()), 4),
                               reinterpret_cast<const Bytef*>(data.data()), static_cast<uInt>(data.size()));
    for (int shift = 24; shift >= 0; shift -= 8) c += static_cast<char>((crc >> shift) & 0xFF);
    return c;
  };
  std::string header;
  for (uint32_t v : {width, height})
    for (int shift = 24; shift >= 0; shift -= 8) header += static_cast<char>((v >> shift) & 0xFF);
  header += {static_cast<char>(depth), static_cast<char>(colour), 0, 0, static_cast<char>(adam7 ? 1 : 0)};
  return std::string("\x89PNG\r\n\x1A\n", 8) + chunk("IHDR", header) + chunk("IDAT", idat) + chunk("IEND", "");
}

// A RIFF/WAVE file. `format_tag` 1 (PCM) with 16/24/32 bits, 3 (IEEE float) with 32 bits; `samples`
// interleaved in [-1, 1]. `extensible` writes WAVE_FORMAT_EXTENSIBLE with the tag in the subformat GUID.
inline std::string wav_bytes(uint16_t format_tag, uint16_t bits, uint16_t channels, uint32_t rate,
                             const std::vector<float>& samples, bool extensible = false) {
  std::string data;
  for (float v : samples) {
    if (format_tag == 3 && bits == 32) {
      uint32_t u;
      std::memcpy(&u, &v, 4);
      put_u32(data, u);
    } else if (format_tag == 3 && bits == 64) {
      const double d = v;
      uint64_t u;
      std::memcpy(&u, &d, 8);
      put_u32(data, static_cast<uint32_t>(u));
      put_u32(data, static_cast<uint32_t>(u >> 32));
    } else {
      const double scale = static_cast<double>(int64_t{1} << (bits - 1));
      const int64_t q = std::min<int64_t>(static_cast<int64_t>(v * scale), static_cast<int64_t>(scale) - 1);
      for (int b = 0; b < bits / 8; ++b) data += static_cast<char>((static_cast<uint64_t>(q) >> (8 * b)) & 0xFF);
    }
  }
  std::string fmt;
  put_u16(fmt, extensible ? 0xFFFE : format_tag);
  put_u16(fmt, channels);
  put_u32(fmt, rate);
  put_u32(fmt, rate * channels * bits / 8);
  put_u16(fmt, static_cast<uint32_t>(channels * bits / 8));
  put_u16(fmt, bits);
  if (extensible) {
    put_u16(fmt, 22);
    put_u16(fmt, bits);
    put_u32(fmt, 0);
    put_u16(fmt, format_tag);
    fmt += std::string("\x00\x00\x00\x00\x10\x00\x80\x00\x00\xAA\x00\x38\x9B\x71", 14);
  }
  std::string s = "RIFF";
  put_u32(s, static_cast<uint32_t>(4 + 8 + fmt.size() + 8 + data.size()));
  s += "WAVE";
  s += "fmt ";
  put_u32(s, static_cast<uint32_t>(fmt.size()));
  s += fmt;
  s += "data";
  put_u32(s, static_cast<uint32_t>(data.size()));
  s += data;
  return s;
}

}  // namespace mpa::test
