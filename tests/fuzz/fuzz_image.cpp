// An image file as `--input NAME=IMAGE` reads it: the decoder picked from the content, the size checked from
// the header before decoding, then shaped for a float NCHW input (resized to its fixed size) and for a uint8
// NHWC gray input (stb converting the channels).
#include "io/image.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const mpa::ValueInfo float_nchw = mpa::fuzz::declared_input("image", 1, mpa::Shape{1, 3, 16, 16}),
                              uint8_gray_nhwc = mpa::fuzz::declared_input("image", 2, mpa::Shape{1, 16, 16, 1});
  const std::string bytes = mpa::fuzz::as_string(data, size);
  for (const mpa::ValueInfo* input : {&float_nchw, &uint8_gray_nhwc})
    mpa::fuzz::refusing_bad_input([&] { mpa::image_input(bytes, *input, {}, "input 'image' (fuzz.img)"); });
  return 0;
}
