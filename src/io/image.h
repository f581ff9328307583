// Image inputs: JPEG/PNG/BMP decoded with stb_image (Debian's libstb-dev), then shaped for a model input:
// resize (bilinear, half-pixel centres, as OpenCV's INTER_LINEAR), channel order, scale and mean/std, layout.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "io/preprocess.h"
#include "model/graph.h"
#include "tensor/tensor.h"

namespace mpa {

struct Image {
  int64_t height = 0, width = 0, channels = 0;  // channels: 1 gray, 3 RGB, 4 RGBA
  std::vector<float> pixels;                    // HWC, 0..255
};

// The image format the first bytes announce: "JPEG", "PNG", "BMP" or "PNM" (binary P5/P6), the formats
// decode_image reads; "" for anything else (stb_image's GIF, PSD, TGA, HDR and PIC decoders stay unreached).
std::string image_format_of(const std::string& bytes);
// The most pixels an image input may have (README, Limits): checked from the header, before decoding.
inline constexpr uint64_t kMaxImagePixels = uint64_t{1} << 26;
// Decodes bytes; `channels` 0 keeps the file's own, else 1, 3 or 4 (stb_image converts). `what` names the source.
Image decode_image(const std::string& bytes, int channels, const std::string& what);

// Bilinear resize with half-pixel centres (OpenCV INTER_LINEAR without antialiasing).
Image resize_bilinear(const Image& image, int64_t height, int64_t width);

// The tensor for model input `declared` from an image file: layout, size, channel count and element type
// come from the declared input unless `options` fix them. `what` names the input and file in messages.
Tensor image_input(const std::string& bytes, const ValueInfo& declared, const Preprocess& options, const std::string& what);

}  // namespace mpa
