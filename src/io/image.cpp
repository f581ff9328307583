#include "io/image.h"

#include <stb_image.h>
#include <zlib.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstring>
#include <memory>
#include <tuple>

#include "common/memory_budget.h"
#include "tensor/dispatch.h"

namespace mpa {

namespace {

std::string fmt_size(int64_t h, int64_t w) { return std::to_string(h) + "x" + std::to_string(w); }

// Where height, width and channels sit in the input tensor (-1: no such axis).
struct Geometry {
  int rank = 4;
  int h_axis = 2, w_axis = 3, c_axis = 1;
};

Geometry geometry_of(const ValueInfo& declared, const Shape& dims, Preprocess::Layout layout, const std::string& what) {
  Geometry g;
  g.rank = static_cast<int>(dims.size());
  if (!(g.rank >= 2 && g.rank <= 4))
    fail(what +
         ": an image fills inputs of rank 2 (HxW), 3 (CHW or HWC) or 4 (NCHW or NHWC); "
         "the model declares " +
         declared_shape_str(declared));
  if (g.rank == 2) {
    if (!(layout == Preprocess::Layout::Auto)) fail(what + ": layout does not apply to a rank-2 (HxW) input");
    g.h_axis = 0, g.w_axis = 1, g.c_axis = -1;
    return g;
  }
  const int b = g.rank == 4 ? 1 : 0;
  if (layout == Preprocess::Layout::Auto) {
    // The axis declared 3 is the channel axis; else one declared 1 or 4 where the other is not; else NCHW.
    auto channel_like = [&](int axis) { return dims[axis] == 1 || dims[axis] == 3 || dims[axis] == 4; };
    const bool nhwc = dims[b] != 3 && (dims[b + 2] == 3 || (channel_like(b + 2) && !channel_like(b)));
    layout = nhwc ? Preprocess::Layout::NHWC : Preprocess::Layout::NCHW;
  }
  if (layout == Preprocess::Layout::NCHW) g.c_axis = b, g.h_axis = b + 1, g.w_axis = b + 2;
  else g.h_axis = b, g.w_axis = b + 1, g.c_axis = b + 2;
  if (g.rank == 4) require(dims[0] < 0 || dims[0] == 1, what + ": one image fills a batch of 1; the model declares " + declared_shape_str(declared));
  return g;
}

}  // namespace

std::string image_format_of(const std::string& bytes) {
  const auto starts = [&](const char* magic) { return bytes.compare(0, std::strlen(magic), magic) == 0; };
  if (starts("\xFF\xD8\xFF")) return "JPEG";
  if (starts("\x89PNG\r\n\x1A\n")) return "PNG";
  if (starts("BM")) return "BMP";
  if (starts("P5") || starts("P6")) return "PNM";
  return "";
}

namespace {

uint32_t little_endian_u32(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v |= static_cast<uint32_t>(static_cast<unsigned char>(bytes[at + i])) << (8 * i);
  return v;
}

uint32_t big_endian_u32(const std::string& bytes, size_t at) {
  uint32_t v = 0;
  for (size_t i = 0; i < 4; ++i) v = v << 8 | static_cast<unsigned char>(bytes[at + i]);
  return v;
}

// Bytes a PNG's image data inflates to: each row of each interlace pass carries a filter byte.
uint64_t png_raw_size(uint64_t w, uint64_t h, uint64_t bits_per_pixel, bool adam7) {
  const auto rows_bytes = [&](uint64_t cols, uint64_t rows) {
    return cols == 0 ? 0 : rows * (1 + (cols * bits_per_pixel + 7) / 8);
  };
  if (!adam7) return rows_bytes(w, h);
  static const int kPass[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                  {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};  // x0, y0, dx, dy
  uint64_t total = 0;
  for (const auto& p : kPass) {
    const uint64_t cols = w > static_cast<uint64_t>(p[0]) ? (w - p[0] + p[2] - 1) / p[2] : 0;
    const uint64_t rows = h > static_cast<uint64_t>(p[1]) ? (h - p[1] + p[3] - 1) / p[3] : 0;
    if (rows) total += rows_bytes(cols, rows);
  }
  return total;
}

// stb_image inflates a PNG's image data without its checksum, into a buffer it doubles for as long as the
// stream goes on: a corrupt stream of a few bytes can make it ask for gigabytes before it fails. zlib
// inflates it first, into a small scratch buffer, stopping as soon as it yields more than the header's
// rows: only an intact stream of exactly that size reaches stb_image. Chunks that run past the end of the
// file are left to stb_image, which refuses them.
void require_png_data_fits(const std::string& bytes, const std::string& what) {
  std::string data;
  uint64_t raw_size = 0;
  bool apple = false;  // CgBI: Apple's PNG variant, raw deflate without the zlib header
  for (size_t at = 8; at + 12 <= bytes.size();) {
    const uint64_t length = big_endian_u32(bytes, at);
    const std::string type = bytes.substr(at + 4, 4);
    if (length > bytes.size() - at - 12) break;
    if (type == "CgBI") apple = true;
    if (type == "IHDR" && length >= 13) {
      static const int kChannels[7] = {1, 0, 3, 1, 2, 0, 4};  // by colour type: grey, RGB, palette, grey+alpha, RGBA
      const unsigned depth = static_cast<unsigned char>(bytes[at + 16]),
                     colour = static_cast<unsigned char>(bytes[at + 17]);
      const uint64_t channels = colour < 7 ? kChannels[colour] : 0;
      raw_size = png_raw_size(big_endian_u32(bytes, at + 8), big_endian_u32(bytes, at + 12), channels * depth,
                              bytes[at + 20] == 1);
    }
    if (type == "IDAT") data.append(bytes, at + 8, length);
    if (type == "IEND") break;
    at += 12 + length;
  }
  if (raw_size == 0 || data.empty()) return;  // no header or no data: stb_image refuses it
  z_stream z{};
  if (inflateInit2(&z, apple ? -MAX_WBITS : MAX_WBITS) != Z_OK) fail(what + ": cannot start inflating the PNG data");
  z.next_in = reinterpret_cast<Bytef*>(data.data());
  z.avail_in = static_cast<uInt>(std::min<size_t>(data.size(), UINT_MAX));
  unsigned char scratch[1 << 14];
  uint64_t inflated = 0;
  int status = Z_OK;
  while (status == Z_OK && inflated <= raw_size) {
    z.next_out = scratch;
    z.avail_out = sizeof(scratch);
    status = inflate(&z, Z_NO_FLUSH);
    inflated += sizeof(scratch) - z.avail_out;
  }  // Z_BUF_ERROR: the data ended before the stream did
  const std::string reason = z.msg ? z.msg : "";
  inflateEnd(&z);
  if (inflated > raw_size)
    fail(what + ": corrupt PNG (its image data inflates beyond the " + std::to_string(raw_size) +
         " bytes its header declares)");
  if (status != Z_STREAM_END)
    fail(what + ": corrupt PNG (its image data does not inflate" + (reason.empty() ? "" : ": " + reason) + ")");
  if (inflated != raw_size)
    fail(what + ": corrupt PNG (its image data inflates to " + std::to_string(inflated) +
         " bytes, its header declares " + std::to_string(raw_size) + ")");
}

// Refuses data that ends before the image does, which the decoder would fill with made-up pixels: a JPEG
// without its end-of-image marker, a BMP or binary PNM shorter than its header's pixel array, a PNG whose
// image data does not inflate to its header's rows.
void require_complete(const std::string& bytes, const std::string& format, int w, int h, const std::string& what) {
  const uint64_t pixels = static_cast<uint64_t>(w) * static_cast<uint64_t>(h);
  if (format == "JPEG") {
    // The last scan must end: an end-of-image marker after the last start-of-scan (an EXIF thumbnail's own
    // markers come earlier; bytes a camera appends after the end are fine).
    const size_t scan = bytes.rfind("\xFF\xDA"), end = bytes.rfind("\xFF\xD9");
    if (scan == std::string::npos || end == std::string::npos || end < scan)
      fail(what + ": truncated JPEG (its last scan has no end-of-image marker)");
  } else if (format == "BMP" && bytes.size() >= 34) {
    const uint32_t offset = little_endian_u32(bytes, 10);
    const uint32_t bits = static_cast<unsigned char>(bytes[28]) | static_cast<unsigned char>(bytes[29]) << 8;
    const uint32_t compression = little_endian_u32(bytes, 30);
    const uint64_t row = (static_cast<uint64_t>(w) * bits + 31) / 32 * 4;
    // stb_image refuses run-length encoding (1, 2) and reads every other value as uncompressed rows.
    const bool run_length = compression == 1 || compression == 2;
    if (!run_length && offset + row * static_cast<uint64_t>(h) > bytes.size())
      fail(what + ": truncated BMP (" + std::to_string(bytes.size()) + " bytes, its header needs " +
           std::to_string(offset + row * static_cast<uint64_t>(h)) + ")");
  } else if (format == "PNG") {
    require_png_data_fits(bytes, what);
  } else if (format == "PNM") {
    const uint64_t samples = pixels * (bytes[1] == '6' ? 3 : 1);
    if (samples > bytes.size())
      fail(what + ": truncated PNM (" + std::to_string(bytes.size()) + " bytes for " + std::to_string(samples) +
           " samples)");
  }
}

}  // namespace

Image decode_image(const std::string& bytes, int channels, const std::string& what) {
  if (!(!bytes.empty())) fail(what + ": empty file");
  const std::string format = image_format_of(bytes);
  if (format.empty()) fail(what + ": not a JPEG, PNG, BMP or binary PNM (P5/P6) image");
  if (!(bytes.size() <= static_cast<size_t>(INT_MAX))) fail(what + ": image file too large");
  const auto* data_in = reinterpret_cast<const stbi_uc*>(bytes.data());
  const int size = static_cast<int>(bytes.size());
  int w = 0, h = 0, n = 0;
  // The header first: its size is checked before any pixel is decoded (a 54-byte BMP can claim 16000x16000).
  if (!stbi_info_from_memory(data_in, size, &w, &h, &n))
    fail(what + ": cannot decode image (" + stbi_failure_reason() + "); JPEG, PNG and BMP are supported");
  if (!(w > 0 && h > 0)) fail(what + ": image header claims " + fmt_size(h, w) + " pixels: an image has at least one");
  if (static_cast<uint64_t>(w) * static_cast<uint64_t>(h) > kMaxImagePixels)
    fail(what + ": image header claims " + fmt_size(h, w) + " pixels, beyond the " + std::to_string(kMaxImagePixels) +
         " an image input may have");
  require_complete(bytes, format, w, h, what);
  // The decoder's bytes and their float copy (Image::pixels), before either exists.
  const uint64_t decoded_channels = channels ? channels : n;
  memory_budget::require(what + ": decoding its " + fmt_size(h, w) + " pixels",
                         static_cast<uint64_t>(w) * static_cast<uint64_t>(h) * decoded_channels * (1 + sizeof(float)));
  std::unique_ptr<stbi_uc, void (*)(void*)> data(stbi_load_from_memory(data_in, size, &w, &h, &n, channels),
                                                 stbi_image_free);
  if (!data) fail(what + ": cannot decode image (" + stbi_failure_reason() + "); JPEG, PNG and BMP are supported");
  Image image;
  image.height = h, image.width = w, image.channels = channels ? channels : n;
  const size_t count = static_cast<size_t>(h) * static_cast<size_t>(w) * static_cast<size_t>(image.channels);
  image.pixels.assign(data.get(), data.get() + count);
  return image;
}

Image resize_bilinear(const Image& image, int64_t height, int64_t width) {
  if (height == image.height && width == image.width) return image;
  // For each output coordinate: the two source samples and the weight of the second.
  struct Tap {
    int64_t i0, i1;
    float t;
  };
  auto taps = [](int64_t in, int64_t out) {
    std::vector<Tap> v(static_cast<size_t>(out));
    const double ratio = static_cast<double>(in) / static_cast<double>(out);
    for (int64_t o = 0; o < out; ++o) {
      const double src = std::max(0.0, (static_cast<double>(o) + 0.5) * ratio - 0.5);
      const int64_t i0 = std::min(static_cast<int64_t>(src), in - 1);
      v[static_cast<size_t>(o)] = {i0, std::min(i0 + 1, in - 1), static_cast<float>(src - static_cast<double>(i0))};
    }
    return v;
  };
  const std::vector<Tap> ys = taps(image.height, height), xs = taps(image.width, width);
  Image out;
  out.height = height, out.width = width, out.channels = image.channels;
  out.pixels.resize(static_cast<size_t>(height * width * image.channels));
  const int64_t c = image.channels;
  auto at = [&](int64_t y, int64_t x, int64_t k) { return image.pixels[static_cast<size_t>((y * image.width + x) * c + k)]; };
  for (int64_t y = 0; y < height; ++y) {
    const Tap& ty = ys[static_cast<size_t>(y)];
    for (int64_t x = 0; x < width; ++x) {
      const Tap& tx = xs[static_cast<size_t>(x)];
      for (int64_t k = 0; k < c; ++k) {
        const float top = at(ty.i0, tx.i0, k) + (at(ty.i0, tx.i1, k) - at(ty.i0, tx.i0, k)) * tx.t;
        const float bottom = at(ty.i1, tx.i0, k) + (at(ty.i1, tx.i1, k) - at(ty.i1, tx.i0, k)) * tx.t;
        out.pixels[static_cast<size_t>((y * width + x) * c + k)] = top + (bottom - top) * ty.t;
      }
    }
  }
  return out;
}

Tensor image_input(const std::string& bytes, const ValueInfo& declared, const Preprocess& opt, const std::string& what) {
  for (const std::string& key : opt.keys)
    if (!(image_preprocess_keys().count(key)))
      fail(what + ": --preprocess " + key + " applies to audio, not to an image");
  const Shape dims = declared.has_shape ? declared.dims : Shape{-1, -1, -1, -1};
  const Geometry g = geometry_of(declared, dims, opt.layout, what);

  // Channels: the declared count, else 3 (1 with gray).
  int64_t channels = g.c_axis < 0 ? 1 : dims[g.c_axis];
  if (channels < 0) channels = opt.channels == Preprocess::Channels::Gray ? 1 : 3;
  if (!(channels == 1 || channels == 3 || channels == 4))
    fail(what + ": the model declares " + std::to_string(channels) + " channels (" + declared_shape_str(declared) +
         "); images give 1 (gray), 3 (RGB) or 4 (RGBA); set layout=nchw or layout=nhwc if the layout was misread");
  if (!(opt.channels != Preprocess::Channels::Gray || channels == 1))
    fail(what + ": gray needs a 1-channel input; the model declares " + std::to_string(channels) + " (" +
         declared_shape_str(declared) + ")");
  if (!(channels != 1 || (opt.channels != Preprocess::Channels::RGB && opt.channels != Preprocess::Channels::BGR)))
    fail(what + ": the input has 1 channel (" + declared_shape_str(declared) +
         "): rgb/bgr do not apply (it is read as gray)");
  for (const auto* values : {&opt.mean, &opt.std})
    if (!(values->size() <= 1 || static_cast<int64_t>(values->size()) == channels))
      fail(what + ": mean and std take one value or one per channel (" + std::to_string(channels) + ")");

  Image image = decode_image(bytes, static_cast<int>(channels), what);

  // Size: resize=HxW, else the declared height/width (one fixed side keeps the aspect ratio), else the image's.
  const int64_t dh = dims[g.h_axis], dw = dims[g.w_axis];
  int64_t height = image.height, width = image.width;
  if (opt.resize) {
    std::tie(height, width) = *opt.resize;
    if (!((dh < 0 || dh == height) && (dw < 0 || dw == width)))
      fail(what + ": resize=" + fmt_size(height, width) + " does not fit the declared shape " +
           declared_shape_str(declared));
  } else if (dh >= 0 && dw >= 0) {
    height = dh, width = dw;
  } else if (dh >= 0) {
    height = dh, width = std::max<int64_t>(1, std::llround(static_cast<double>(image.width) * dh / image.height));
  } else if (dw >= 0) {
    width = dw, height = std::max<int64_t>(1, std::llround(static_cast<double>(image.height) * dw / image.width));
  }
  // The size given by resize= or the model is bounded as a file's own is, before anything is allocated.
  if (!(width == 0 || static_cast<uint64_t>(height) <= kMaxImagePixels / static_cast<uint64_t>(width)))
    fail(what + ": resizing to " + fmt_size(height, width) + " pixels, beyond the " + std::to_string(kMaxImagePixels) +
         " an image input may have");
  // The resized pixels and the tensor made of them must also fit the memory budget.
  memory_budget::require(what + ": an image of " + fmt_size(height, width) + " pixels",
                         tensor_bytes(DType::Float32, {2, height, width, channels}));
  image = resize_bilinear(image, height, width);

  Shape shape(static_cast<size_t>(g.rank), 1);
  shape[g.h_axis] = height, shape[g.w_axis] = width;
  if (g.c_axis >= 0) shape[g.c_axis] = channels;
  // Element strides of h, w, c in the output.
  Shape strides(shape.size(), 1);
  for (int i = g.rank - 2; i >= 0; --i) strides[i] = strides[i + 1] * shape[i + 1];
  const int64_t sh = strides[g.h_axis], sw = strides[g.w_axis], sc = g.c_axis >= 0 ? strides[g.c_axis] : 0;
  const bool bgr = opt.channels == Preprocess::Channels::BGR && channels >= 3;

  const DType dtype = declared.elem_type == 0 ? DType::Float32 : static_cast<DType>(declared.elem_type);
  Tensor t(dtype, shape);
  if (dtype == DType::UInt8) {
    if (!(!opt.keys.count("scale") && !opt.keys.count("mean") && !opt.keys.count("std")))
      fail(what + ": the model takes uint8 pixels: scale, mean and std do not apply");
  } else {
    if (!(dtype_is_float(dtype)))
      fail(what + ": the model declares " + onnx_type_name(declared.elem_type) + "; images fill float or uint8 inputs");
  }
  visit_dtype(dtype, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, uint8_t> || std::is_floating_point_v<compute_t<T>>) {
      T* out = t.data<T>();
      for (int64_t y = 0; y < height; ++y)
        for (int64_t x = 0; x < width; ++x)
          for (int64_t k = 0; k < channels; ++k) {
            const int64_t src_k = bgr && k < 3 ? 2 - k : k;
            const float pixel = image.pixels[static_cast<size_t>((y * width + x) * channels + src_k)];
            T& dst = out[y * sh + x * sw + k * sc];
            if constexpr (std::is_same_v<T, uint8_t>) {
              dst = static_cast<uint8_t>(std::clamp(std::lround(pixel), 0L, 255L));
            } else {
              const double mean = opt.mean.empty() ? 0.0 : opt.mean[opt.mean.size() == 1 ? 0 : static_cast<size_t>(k)];
              const double std = opt.std.empty() ? 1.0 : opt.std[opt.std.size() == 1 ? 0 : static_cast<size_t>(k)];
              dst = store<T>(static_cast<compute_t<T>>((pixel * opt.scale - mean) / std));
            }
          }
    }
  });
  return t;
}

}  // namespace mpa
