// Input helpers: --preprocess parsing, images (decode, resize, layout, normalisation), WAV files, numbers
// for scalar inputs, and symbolic dims bound by the inputs given. Test files are written by code
// (support/media_files.h).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <numbers>

#include "io/image.h"
#include "io/inputs.h"
#include "io/npy.h"
#include "io/preprocess.h"
#include "io/resample.h"
#include "io/wav.h"
#include "model/loader.h"
#include "support/media_files.h"
#include "support/model_builder.h"

using namespace mpa;
using mpa::test::bmp_bytes;
using mpa::test::ModelBuilder;
using mpa::test::png_bytes;
using mpa::test::png_with_idat;
using mpa::test::TempDir;
using mpa::test::wav_bytes;
using mpa::test::zlib_compressed;

namespace {

// A declared input; dims < 0 are symbolic, named by `params` (or anonymous).
ValueInfo declared(const std::string& name, DType dtype, const Shape& dims, std::vector<std::string> params = {}) {
  ValueInfo v;
  v.name = name;
  v.elem_type = static_cast<int32_t>(dtype);
  v.has_shape = true;
  v.dims = dims;
  params.resize(dims.size());
  v.dim_params = params;
  return v;
}

// Fails the test with the message when `f` does not throw an mpa::Error containing every fragment.
template <class F> void expect_error(F f, const std::vector<std::string>& fragments) {
  try {
    f();
    ADD_FAILURE() << "no error; expected one containing '" << fragments.front() << "'";
  } catch (const Error& e) {
    const std::string m = e.what();
    EXPECT_EQ(m.find('\n'), std::string::npos) << m;
    for (const auto& f : fragments) EXPECT_NE(m.find(f), std::string::npos) << "missing '" << f << "' in: " << m;
  }
}

// A 4x2 (HxW) RGB image whose channels are distinct: pixel (y, x) = (10y + x, 100 + 10y + x, 200 + y).
std::vector<uint8_t> test_pixels(int height = 4, int width = 2) {
  std::vector<uint8_t> p;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x) {
      p.push_back(static_cast<uint8_t>(10 * y + x));
      p.push_back(static_cast<uint8_t>(100 + 10 * y + x));
      p.push_back(static_cast<uint8_t>(200 + y));
    }
  return p;
}

std::vector<float> floats(const Tensor& t) {
  const std::vector<double> d = t.to_double_vector();
  return {d.begin(), d.end()};
}

}  // namespace

// [SECTION] --preprocess

TEST(Preprocess, ParsesEveryOption) {
  const Preprocess p = parse_preprocess(
      "resize=224x256,layout=nhwc,bgr,scale=1/255,mean=0.485/0.456/0.406,std=0.229/0.224/0.225", "--preprocess x");
  ASSERT_TRUE(p.resize.has_value());
  EXPECT_EQ(p.resize->first, 224);
  EXPECT_EQ(p.resize->second, 256);
  EXPECT_EQ(p.layout, Preprocess::Layout::NHWC);
  EXPECT_EQ(p.channels, Preprocess::Channels::BGR);
  EXPECT_DOUBLE_EQ(p.scale, 1.0 / 255);
  EXPECT_EQ(p.mean, (std::vector<double>{0.485, 0.456, 0.406}));
  EXPECT_EQ(p.std, (std::vector<double>{0.229, 0.224, 0.225}));
  const Preprocess a = parse_preprocess("offset=16000,length=512,mono", "--preprocess audio");
  EXPECT_EQ(a.offset, 16000);
  EXPECT_EQ(a.length, 512);
  EXPECT_TRUE(a.mono);
  EXPECT_DOUBLE_EQ(parse_preprocess("scale=0.5", "x").scale, 0.5);
  const Preprocess r = parse_preprocess("rate=16000,scale=32768", "--preprocess audio");
  EXPECT_EQ(r.rate, 16000);
  EXPECT_EQ(r.scale, 32768.0);
  EXPECT_EQ(parse_preprocess("scale=1/32768", "x").scale, 0x1p-15);
}

TEST(Preprocess, RejectsMalformedOptions) {
  expect_error([] { parse_preprocess("resize=224", "--preprocess x"); }, {"--preprocess x", "resize", "HEIGHTxWIDTH"});
  expect_error([] { parse_preprocess("rezise=2x2", "--preprocess x"); }, {"unknown option 'rezise'"});
  expect_error([] { parse_preprocess("std=1/0", "--preprocess x"); }, {"std must not be 0"});
  expect_error([] { parse_preprocess("rgb,bgr", "--preprocess x"); }, {"exclude each other"});
  expect_error([] { parse_preprocess("scale=1/0", "--preprocess x"); }, {"bad scale"});
  expect_error([] { parse_preprocess("layout=chw", "--preprocess x"); }, {"nchw or nhwc"});
  expect_error([] { parse_preprocess("length=0", "--preprocess x"); }, {"bad length"});
  expect_error([] { parse_preprocess("mono=1", "--preprocess x"); }, {"'mono' takes no value"});
  expect_error([] { parse_preprocess("scale=1,scale=2", "--preprocess x"); }, {"given twice"});
  expect_error([] { parse_preprocess("", "--preprocess x"); }, {"no options"});
  // Issue 19: rate and the audio scale are read strictly.
  for (const char* rate : {"rate=0", "rate=abc", "rate=-16000", "rate=16000.5", "rate=768001", "rate=1e4"})
    expect_error([&] { parse_preprocess(rate, "--preprocess x"); }, {"--preprocess x", "bad rate", "1 to 768000"});
  for (const char* scale : {"scale=nan", "scale=inf", "scale=-inf", "scale=1e999", "scale=1e308/1e-308"})
    expect_error([&] { parse_preprocess(scale, "--preprocess x"); }, {"--preprocess x", "bad scale", "finite"});
  expect_error([] { parse_preprocess("rate=16000,rate=8000", "--preprocess x"); }, {"'rate' is given twice"});
}

// [SECTION] Images

// Interlaced (Adam7) PNGs carry their rows in seven passes of their own widths: the size check counts them.
TEST(Image, DecodesInterlacedPng) {
  const uint32_t width = 5, height = 3;
  std::vector<uint8_t> pixels(width * height * 3);
  for (size_t i = 0; i < pixels.size(); ++i) pixels[i] = static_cast<uint8_t>(i * 7 + 1);
  static const int kPass[7][4] = {{0, 0, 8, 8}, {4, 0, 8, 8}, {0, 4, 4, 8}, {2, 0, 4, 4},
                                  {0, 2, 2, 4}, {1, 0, 2, 2}, {0, 1, 1, 2}};  // x0, y0, dx, dy
  std::string raw;
  for (const auto& p : kPass) {
    if (static_cast<uint32_t>(p[0]) >= width) continue;  // a pass without columns has no rows either
    for (uint32_t y = p[1]; y < height; y += p[3]) {
      raw += '\0';
      for (uint32_t x = p[0]; x < width; x += p[2])
        for (int c = 0; c < 3; ++c) raw += static_cast<char>(pixels[(y * width + x) * 3 + c]);
    }
  }
  const Image image = decode_image(png_with_idat(width, height, zlib_compressed(raw), true), 3, "a.png");
  EXPECT_EQ(image.pixels, std::vector<float>(pixels.begin(), pixels.end()));
}

TEST(Image, DecodesBmpAndPngExactly) {
  const std::vector<uint8_t> pixels = test_pixels();
  for (const std::string& bytes : {bmp_bytes(2, 4, pixels), png_bytes(2, 4, 3, pixels)}) {
    const Image image = decode_image(bytes, 3, "test");
    EXPECT_EQ(image.height, 4);
    EXPECT_EQ(image.width, 2);
    EXPECT_EQ(image.channels, 3);
    EXPECT_EQ(image.pixels, std::vector<float>(pixels.begin(), pixels.end()));
  }
  expect_error([] { decode_image("not an image at all", 3, "input 'x' (a.png)"); },
               {"input 'x' (a.png)", "not a JPEG, PNG, BMP or binary PNM"});
  // Formats stb_image would read beyond those four are not decoded at all.
  expect_error([] { decode_image("GIF89a\x01\x00\x01\x00\x00\x00\x00", 3, "input 'x' (a.png)"); },
               {"input 'x' (a.png)", "not a JPEG, PNG, BMP or binary PNM"});
  // A header whose size fields are text: refused by the size it claims, before any decoding.
  expect_error([] { decode_image("P6 99999 99999 255 not really", 3, "input 'x' (a.png)"); },
               {"input 'x' (a.png)", "header claims"});
  expect_error([] { decode_image(png_bytes(2, 4, 3, std::vector<uint8_t>(24, 7)).substr(0, 30), 3, "a.png"); },
               {"a.png", "cannot decode image"});
  expect_error([] { decode_image("", 3, "input 'x' (a.png)"); }, {"empty file"});
  // PNG image data is inflated with its checksum and held to the header's rows before stb_image sees it.
  // 8-bit RGB rows of width 2 take 7 bytes each, filter byte included.
  const std::string two_rows(14, '\0');
  const std::string stream = zlib_compressed(two_rows);
  EXPECT_EQ(decode_image(png_with_idat(2, 2, stream), 3, "a.png").pixels, std::vector<float>(12, 0.0f));
  // Two whole zlib streams in one file: stb_image's inflater asked for 2 GiB on such a file (a 167-byte PNG
  // found by the image fuzzer, tests/fuzz/regressions/image/).
  expect_error([&] { decode_image(png_with_idat(2, 1, stream), 3, "a.png"); },
               {"a.png", "corrupt PNG", "inflates beyond the 7 bytes its header declares"});
  expect_error([&] { decode_image(png_with_idat(2, 3, stream), 3, "a.png"); },
               {"a.png", "corrupt PNG", "inflates to 14 bytes, its header declares 21"});
  std::string bad_checksum = stream;
  bad_checksum.back() = static_cast<char>(bad_checksum.back() ^ 1);
  expect_error([&] { decode_image(png_with_idat(2, 2, bad_checksum), 3, "a.png"); },
               {"a.png", "corrupt PNG", "does not inflate: incorrect data check"});
  expect_error([&] { decode_image(png_with_idat(2, 2, stream.substr(0, stream.size() - 5)), 3, "a.png"); },
               {"a.png", "corrupt PNG", "does not inflate"});
  // A BMP header naming a compression stb_image does not know (it reads the rows as uncompressed) is held to
  // its rows' size like an uncompressed one: 123 bytes claiming 16776966x4 pixels (found by the image fuzzer).
  std::string bogus = bmp_bytes(2, 2, std::vector<uint8_t>(12, 9));
  for (int i = 0; i < 4; ++i) bogus[18 + i] = static_cast<char>((16776966 >> (8 * i)) & 0xFF);
  bogus[30] = '\x00', bogus[31] = '\x00', bogus[32] = '\xFF', bogus[33] = '\xD9';
  expect_error([&] { decode_image(bogus, 3, "b.bmp"); }, {"b.bmp", "truncated BMP"});
}

TEST(Image, BilinearResizeUsesHalfPixelCentres) {
  Image image;
  image.height = 2, image.width = 4, image.channels = 1;
  image.pixels = {0, 10, 20, 30, 40, 50, 60, 70};
  // Halving averages 2x2 blocks exactly (source x = 2o + 0.5).
  const Image half = resize_bilinear(image, 1, 2);
  EXPECT_EQ(half.pixels, (std::vector<float>{25, 45}));
  // Doubling a row: x_src = (o + 0.5) / 2 - 0.5, clamped at 0: 0, 0.25, 0.75, 1.25, ... 3 (the edge repeats).
  Image row;
  row.height = 1, row.width = 2, row.channels = 1;
  row.pixels = {0, 100};
  EXPECT_EQ(resize_bilinear(row, 1, 4).pixels, (std::vector<float>{0, 25, 75, 100}));
}

TEST(Image, NchwBgrScaleMeanStd) {
  const std::string bytes = png_bytes(2, 4, 3, test_pixels());
  const Preprocess p = parse_preprocess("bgr,scale=0.5,mean=1/2/3,std=2/4/8", "--preprocess x");
  const Tensor t = image_input(bytes, declared("x", DType::Float32, {1, 3, 4, 2}), p, "x");
  ASSERT_EQ(t.shape(), (Shape{1, 3, 4, 2}));
  const float* v = t.data<float>();
  // Channel 0 is the blue plane (200 + y), normalised with mean 1 and std 2.
  EXPECT_FLOAT_EQ(v[0 * 8 + 3 * 2 + 1], (0.5f * 203 - 1) / 2);
  // Channel 2 is the red plane (10y + x) with mean 3 and std 8.
  EXPECT_FLOAT_EQ(v[2 * 8 + 3 * 2 + 1], (0.5f * 31 - 3) / 8);
  EXPECT_FLOAT_EQ(v[1 * 8 + 0], (0.5f * 100 - 2) / 4);
}

TEST(Image, NhwcLayoutIsReadFromTheDeclaredShape) {
  const std::string bytes = bmp_bytes(2, 4, test_pixels());
  const Tensor t = image_input(bytes, declared("x", DType::Float32, {1, 4, 2, 3}), Preprocess{}, "x");
  ASSERT_EQ(t.shape(), (Shape{1, 4, 2, 3}));
  const std::vector<float> v = floats(t);
  const std::vector<uint8_t> p = test_pixels();
  EXPECT_EQ(v, std::vector<float>(p.begin(), p.end()));
  // Explicit layout wins over the guess: [1, 3, 3, 3] would read as NCHW.
  const Preprocess nhwc = parse_preprocess("layout=nhwc", "x");
  EXPECT_EQ(image_input(bytes, declared("x", DType::Float32, {1, -1, -1, 3}), nhwc, "x").shape(), (Shape{1, 4, 2, 3}));
  // Rank 3 without batch, CHW.
  EXPECT_EQ(image_input(bytes, declared("x", DType::Float32, {3, -1, -1}), Preprocess{}, "x").shape(), (Shape{3, 4, 2}));
}

TEST(Image, ResizesToTheDeclaredSizeOrKeepsTheAspectRatio) {
  const std::string bytes = png_bytes(2, 4, 3, test_pixels());
  EXPECT_EQ(image_input(bytes, declared("x", DType::Float32, {1, 3, 8, 6}), Preprocess{}, "x").shape(), (Shape{1, 3, 8, 6}));
  // Only the height is fixed (a text recogniser's [N, 3, 48, W]): the width follows the aspect ratio.
  EXPECT_EQ(image_input(bytes, declared("x", DType::Float32, {-1, 3, 8, -1}), Preprocess{}, "x").shape(), (Shape{1, 3, 8, 4}));
  EXPECT_EQ(image_input(bytes, declared("x", DType::Float32, {-1, 3, -1, -1}), Preprocess{}, "x").shape(), (Shape{1, 3, 4, 2}));
  const Preprocess resize = parse_preprocess("resize=3x5", "x");
  EXPECT_EQ(image_input(bytes, declared("x", DType::Float32, {-1, 3, -1, -1}), resize, "x").shape(), (Shape{1, 3, 3, 5}));
  expect_error([&] { image_input(bytes, declared("x", DType::Float32, {1, 3, 8, 8}), resize, "input 'x' (a.png)"); },
               {"input 'x' (a.png)", "resize=3x5", "1x3x8x8"});
}

TEST(Image, GrayForOneChannelModelsAndUint8Inputs) {
  const std::vector<uint8_t> gray_pixels = {0, 30, 60, 90, 120, 150, 200, 250};
  const std::string gray_png = png_bytes(4, 2, 1, gray_pixels);
  const Tensor g = image_input(gray_png, declared("x", DType::Float32, {1, 1, 2, 4}), parse_preprocess("scale=1/255", "x"), "x");
  ASSERT_EQ(g.shape(), (Shape{1, 1, 2, 4}));
  EXPECT_FLOAT_EQ(g.data<float>()[7], 250.f / 255.f);
  // A colour file into a 1-channel input is converted to luma by stb_image: white stays 255.
  const std::string white = png_bytes(1, 1, 3, {255, 255, 255});
  EXPECT_EQ(floats(image_input(white, declared("x", DType::Float32, {1, 1, 1, 1}), Preprocess{}, "x")), (std::vector<float>{255}));
  const Tensor u = image_input(bmp_bytes(2, 4, test_pixels()), declared("x", DType::UInt8, {1, 4, 2, 3}), Preprocess{}, "x");
  ASSERT_EQ(u.dtype(), DType::UInt8);
  EXPECT_EQ(u.data<uint8_t>()[3 * 6 + 1 * 3 + 2], 203);
  const Tensor h = image_input(gray_png, declared("x", DType::Float16, {2, 4}), Preprocess{}, "x");
  EXPECT_EQ(h.dtype(), DType::Float16);
}

TEST(Image, RejectsShapesAndOptionsThatDoNotFit) {
  const std::string bytes = png_bytes(2, 4, 3, test_pixels());
  const std::string what = "input 'x' (a.png)";
  expect_error([&] { image_input(bytes, declared("x", DType::Float32, {1, 1, 3, 4, 2}), Preprocess{}, what); },
               {what, "rank 2", "1x1x3x4x2"});
  expect_error([&] { image_input(bytes, declared("x", DType::Float32, {2, 3, 4, 2}), Preprocess{}, what); }, {what, "batch of 1"});
  expect_error([&] { image_input(bytes, declared("x", DType::Float32, {1, 2, 4, 5}), Preprocess{}, what); }, {what, "2 channels"});
  expect_error([&] { image_input(bytes, declared("x", DType::Float32, {1, 3, 4, 2}), parse_preprocess("gray", "x"), what); },
               {what, "gray needs a 1-channel input"});
  expect_error([&] { image_input(bytes, declared("x", DType::Float32, {1, 3, 4, 2}), parse_preprocess("mean=1/2", "x"), what); },
               {what, "one per channel (3)"});
  expect_error([&] { image_input(bytes, declared("x", DType::Float32, {1, 3, 4, 2}), parse_preprocess("mono", "x"), what); },
               {what, "mono applies to audio"});
  expect_error([&] { image_input(bytes, declared("x", DType::Int64, {1, 3, 4, 2}), Preprocess{}, what); }, {what, "int64"});
  expect_error([&] { image_input(bytes, declared("x", DType::UInt8, {1, 4, 2, 3}), parse_preprocess("scale=2", "x"), what); },
               {what, "uint8", "do not apply"});
}

// [SECTION] WAV

TEST(Wav, ReadsPcmAndFloatEncodings) {
  const std::vector<float> mono = {0.5f, -0.25f, 0.f, -1.f};
  for (uint16_t bits : {16, 24, 32}) {
    const Audio a = parse_wav(wav_bytes(1, bits, 1, 16000, mono), "t.wav");
    EXPECT_EQ(a.sample_rate, 16000);
    EXPECT_EQ(a.channels, 1);
    EXPECT_EQ(a.samples, mono) << bits << "-bit PCM";
  }
  const std::vector<float> stereo = {0.1f, -0.7f, 0.3f, 0.9f, -0.5f, 0.25f};
  const Audio f = parse_wav(wav_bytes(3, 32, 2, 8000, stereo), "t.wav");
  EXPECT_EQ(f.channels, 2);
  EXPECT_EQ(f.frames, 3);
  EXPECT_EQ(f.samples, stereo);
  EXPECT_EQ(parse_wav(wav_bytes(3, 32, 2, 8000, stereo, /*extensible=*/true), "t.wav").samples, stereo);
  EXPECT_EQ(parse_wav(wav_bytes(1, 16, 1, 8000, mono, true), "t.wav").samples, mono);
}

TEST(Wav, RejectsUnsupportedEncodingsAndBrokenFiles) {
  expect_error([] { parse_wav(wav_bytes(6, 8, 1, 8000, {0.f, 0.f}), "input 'a' (t.wav)"); },
               {"input 'a' (t.wav)", "A-law", "not supported"});
  expect_error([] { parse_wav(wav_bytes(3, 64, 1, 8000, {0.f, 0.f}), "t.wav"); }, {"64-bit float", "not supported"});
  const std::string good = wav_bytes(1, 16, 1, 8000, {0.1f, 0.2f, 0.3f});
  expect_error([&] { parse_wav(good.substr(0, good.size() - 2), "t.wav"); }, {"t.wav", "runs past the end"});
  expect_error([] { parse_wav(std::string("RIFF\x04\0\0\0WAVE", 12), "t.wav"); }, {"no fmt chunk"});
  expect_error([] { parse_wav("not a wav file at all", "t.wav"); }, {"not a WAV file"});
}

TEST(Wav, ShapesAudioToTheDeclaredRank) {
  const std::vector<float> stereo = {0.5f, -0.5f, 0.25f, -0.25f, 1.f, 0.f};  // 3 frames, L/R
  const std::string bytes = wav_bytes(3, 32, 2, 16000, stereo);
  // Planar [C, N] by default, leading dims 1.
  const Tensor planar = audio_input(bytes, declared("a", DType::Float32, {1, 2, -1}), Preprocess{}, "a");
  EXPECT_EQ(planar.shape(), (Shape{1, 2, 3}));
  EXPECT_EQ(floats(planar), (std::vector<float>{0.5f, 0.25f, 1.f, -0.5f, -0.25f, 0.f}));
  // Time-major when the declared last dim is the channel count.
  const Tensor interleaved = audio_input(bytes, declared("a", DType::Float32, {-1, 2}), Preprocess{}, "a");
  EXPECT_EQ(interleaved.shape(), (Shape{3, 2}));
  EXPECT_EQ(floats(interleaved), stereo);
  // mono averages the channels; offset/length pick a window.
  const Tensor mono = audio_input(bytes, declared("a", DType::Float32, {1, -1}), parse_preprocess("mono,offset=1,length=2", "x"), "a");
  EXPECT_EQ(mono.shape(), (Shape{1, 2}));
  EXPECT_EQ(floats(mono), (std::vector<float>{0.f, 0.5f}));
  const Tensor one = audio_input(wav_bytes(1, 16, 1, 16000, {0.5f, 0.25f}), declared("a", DType::Float32, {-1}), Preprocess{}, "a");
  EXPECT_EQ(one.shape(), (Shape{2}));
}

TEST(Wav, RejectsWindowsAndShapesThatDoNotFit) {
  const std::string stereo = wav_bytes(3, 32, 2, 16000, {0.5f, -0.5f, 0.25f, -0.25f});
  const std::string mono = wav_bytes(1, 16, 1, 16000, std::vector<float>(10, 0.1f));
  const std::string what = "input 'a' (t.wav)";
  expect_error([&] { audio_input(stereo, declared("a", DType::Float32, {-1}), Preprocess{}, what); }, {what, "a:mono"});
  expect_error([&] { audio_input(stereo, declared("a", DType::Float32, {1, -1}), Preprocess{}, what); }, {what, "1 channels", "a:mono"});
  expect_error([&] { audio_input(mono, declared("a", DType::Float32, {1, 4}), Preprocess{}, what); },
               {what, "takes 4 frames", "10 are read", "offset=N,length=4"});
  expect_error([&] { audio_input(mono, declared("a", DType::Float32, {1, -1}), parse_preprocess("offset=11", "x"), what); },
               {what, "past the end"});
  expect_error([&] { audio_input(mono, declared("a", DType::Float32, {1, -1}), parse_preprocess("offset=4,length=7", "x"), what); },
               {what, "runs past the end (10 frames)"});
  expect_error([&] { audio_input(mono, declared("a", DType::Int16, {1, -1}), Preprocess{}, what); }, {what, "int16", "float"});
  expect_error([&] { audio_input(mono, declared("a", DType::Float32, {1, -1}), parse_preprocess("bgr", "x"), what); },
               {what, "bgr applies to images"});
}

TEST(Wav, ScaleMultipliesEverySampleExactly) {
  const std::string pcm16 = wav_bytes(1, 16, 1, 16000, {0.5f, -0.25f, -1.f, 0x1p-15f});
  const Tensor int16_range =
      audio_input(pcm16, declared("a", DType::Float32, {1, -1}), parse_preprocess("scale=32768", "x"), "a");
  EXPECT_EQ(floats(int16_range), (std::vector<float>{16384.f, -8192.f, -32768.f, 1.f}));
  const std::string f32 = wav_bytes(3, 32, 1, 16000, {16384.f, -3.f});
  const Tensor back =
      audio_input(f32, declared("a", DType::Float32, {1, -1}), parse_preprocess("scale=1/32768", "x"), "a");
  EXPECT_EQ(floats(back), (std::vector<float>{0.5f, -3.f / 32768.f}));
}

// [SECTION] Resampling

namespace {

// A `hz` sine of amplitude `amplitude` at `rate`, mono.
Audio sine(double hz, double amplitude, int64_t rate, int64_t frames) {
  Audio a;
  a.sample_rate = rate, a.channels = 1, a.frames = frames;
  for (int64_t i = 0; i < frames; ++i)
    a.samples.push_back(static_cast<float>(
        amplitude * std::sin(2 * std::numbers::pi * hz * static_cast<double>(i) / static_cast<double>(rate))));
  return a;
}

// Channel `c` of `audio`, resampled from a `hz` sine of amplitude `amplitude`, compared with that sine at the new
// rate over a middle span: the first and last 20 ms are left out (the file's abrupt start and end ring through
// the filter), shifted by a quarter period so that the span holds whole periods from peak to peak.
struct SineCheck {
  double max_error = 0;          // the largest difference from the ideal sine
  int64_t rising_crossings = 0;  // one per period
};
SineCheck check_sine(const Audio& audio, int64_t c, double hz, double amplitude) {
  const int64_t edge = audio.sample_rate / 50,
                quarter = static_cast<int64_t>(static_cast<double>(audio.sample_rate) / hz / 4);
  const int64_t begin = edge + quarter, end = audio.frames - edge + quarter;
  auto at = [&](int64_t f) { return static_cast<double>(audio.samples[static_cast<size_t>(f * audio.channels + c)]); };
  SineCheck check;
  for (int64_t f = begin; f < end; ++f) {
    const double want = amplitude * std::sin(2 * std::numbers::pi * hz * static_cast<double>(f) /
                                             static_cast<double>(audio.sample_rate));
    check.max_error = std::max(check.max_error, std::abs(at(f) - want));
    check.rising_crossings += f > begin && at(f - 1) < 0 && at(f) >= 0;
  }
  return check;
}

}  // namespace

// A 1 kHz sine keeps its frequency, amplitude and phase through libsamplerate's best converter, down (44.1 kHz to
// 16 kHz) and up (16 kHz to 48 kHz): within 1e-6 of the ideal sine of amplitude 0.5 (measured: 1.0e-7 and 3.8e-8,
// float rounding; the converter's worst case, 97 dB, would be 7e-6).
TEST(Resample, KeepsASinesFrequencyAmplitudeAndPhase) {
  struct Case {
    int64_t from, to;
  };
  for (const Case c : {Case{44100, 16000}, Case{16000, 48000}}) {
    const Audio out = resample(sine(1000, 0.5, c.from, c.from), c.to, "t.wav");  // one second
    EXPECT_EQ(out.sample_rate, c.to);
    ASSERT_EQ(out.frames, c.to);
    const SineCheck check = check_sine(out, 0, 1000, 0.5);
    EXPECT_LT(check.max_error, 1e-6) << c.from << " -> " << c.to;
    EXPECT_EQ(check.rising_crossings, 960) << c.from << " -> " << c.to;  // 1000 periods a second, 960 ms kept
    std::printf("resample %lld -> %lld Hz: max error from the ideal 1 kHz sine of amplitude 0.5: %.3g\n",
                static_cast<long long>(c.from), static_cast<long long>(c.to), check.max_error);
  }
}

TEST(Resample, LengthIsTheCeilingOfFramesTimesTheRatio) {
  struct Case {
    int64_t frames, from, to, want;
  };
  for (const Case c :
       {Case{1000, 44100, 16000, 363}, Case{44101, 44100, 16000, 16001}, Case{3, 44100, 16000, 2},
        Case{1, 8000, 16000, 2}, Case{7, 48000, 16000, 3}, Case{1, 48000, 8000, 1}, Case{0, 8000, 16000, 0}}) {
    const Audio out = resample(sine(100, 0.5, c.from, c.frames), c.to, "t.wav");
    EXPECT_EQ(out.frames, c.want) << c.frames << " frames " << c.from << " -> " << c.to;
    EXPECT_EQ(out.samples.size(), static_cast<size_t>(c.want));
  }
}

// Channels are resampled alike and separately: a right channel that is the left one negated stays so, bit for bit.
TEST(Resample, ChannelsStayInterleavedAndSeparate) {
  Audio stereo = sine(440, 0.8, 22050, 22050);
  stereo.channels = 2;
  std::vector<float> left;
  left.swap(stereo.samples);
  for (float v : left) stereo.samples.insert(stereo.samples.end(), {v, -v});
  const Audio out = resample(stereo, 16000, "t.wav");
  ASSERT_EQ(out.frames, 16000);
  ASSERT_EQ(out.channels, 2);
  for (int64_t f = 0; f < out.frames; ++f)
    ASSERT_EQ(out.samples[static_cast<size_t>(2 * f + 1)], -out.samples[static_cast<size_t>(2 * f)]) << f;
  EXPECT_LT(check_sine(out, 0, 440, 0.8).max_error, 1e-6);
}

TEST(Resample, RefusesRatesAndSizesBeyondItsBounds) {
  const std::string what = "input 'a' (t.wav)";
  expect_error([&] { resample(sine(100, 0.5, 1000, 10), 129000, what); },
               {what, "1000 Hz", "rate=129000", "factor of 128"});
  expect_error([&] { resample(sine(100, 0.5, 129000, 10), 1000, what); },
               {what, "129000 Hz", "rate=1000", "factor of 128"});
  EXPECT_EQ(resample(sine(100, 0.5, 1000, 10), 128000, what).frames, 1280);
  expect_error([&] { resample(sine(100, 0.5, 0, 0), 16000, what); }, {what, "rate=16000", "declares 0 Hz"});
  // 600,000 frames at 6 kHz would become 76.8 million at 768 kHz: refused before anything is allocated.
  expect_error([&] { resample(sine(100, 0.5, 6000, 600000), 768000, what); },
               {what, "rate=768000", "76800000 samples", "beyond the 67108864"});
  // The size of the file is checked before its samples are read (none are here).
  Audio long_file;
  long_file.sample_rate = 16000, long_file.channels = 2, long_file.frames = kMaxResampledSamples / 2 + 1;
  expect_error([&] { resample(long_file, 8000, what); },
               {what, "rate=8000", "67108866 samples", "beyond the 67108864"});
}

// rate= resamples before the window is taken, so offset and length count frames at the model's rate; the file's own
// rate leaves every sample as it is; rate applies to audio only.
TEST(Wav, RateResamplesBeforeTheWindowIsTaken) {
  const Audio tone = sine(1000, 0.5, 44100, 4410);
  const std::string bytes = wav_bytes(3, 32, 1, 44100, tone.samples);
  const ValueInfo input = declared("a", DType::Float32, {1, -1});
  const Tensor all = audio_input(bytes, input, parse_preprocess("rate=16000", "x"), "a");
  EXPECT_EQ(all.shape(), (Shape{1, 1600}));
  const Tensor window =
      audio_input(bytes, input, parse_preprocess("rate=16000,offset=1500,length=100,scale=2", "x"), "a");
  ASSERT_EQ(window.shape(), (Shape{1, 100}));
  const std::vector<float> all_values = floats(all), window_values = floats(window);
  for (size_t i = 0; i < 100; ++i) EXPECT_EQ(window_values[i], 2 * all_values[1500 + i]) << i;
  EXPECT_EQ(floats(audio_input(bytes, input, parse_preprocess("rate=44100", "x"), "a")), tone.samples);
  const std::string what = "input 'a' (t.wav)";
  expect_error([&] { audio_input(bytes, input, parse_preprocess("rate=16000,offset=1500,length=101", "x"), what); },
               {what, "length 101 from offset 1500 runs past the end (1600 frames at 16000 Hz)"});
  expect_error([&] { audio_input(bytes, input, parse_preprocess("rate=300", "x"), what); },
               {what, "44100 Hz", "rate=300", "factor of 128"});
  expect_error(
      [&] {
        image_input(png_bytes(2, 4, 3, test_pixels()), declared("x", DType::Float32, {1, 3, 4, 2}),
                    parse_preprocess("rate=16000", "x"), what);
      },
      {what, "rate applies to audio"});
}

// [SECTION] Numbers for scalar inputs

TEST(ScalarInput, TakesTheDeclaredTypeAndRank) {
  const Tensor sr = read_input_value(declared("sr", DType::Int64, {}), "16000", nullptr);
  EXPECT_EQ(sr.dtype(), DType::Int64);
  EXPECT_EQ(sr.shape(), Shape{});
  EXPECT_EQ(sr.data<int64_t>()[0], 16000);
  const Tensor big = read_input_value(declared("n", DType::Int64, {1}), "9007199254740993", nullptr);
  EXPECT_EQ(big.shape(), Shape{1});
  EXPECT_EQ(big.data<int64_t>()[0], 9007199254740993);  // beyond 2^53: parsed as an integer
  const Tensor scale = read_input_value(declared("scale", DType::Float32, {-1}), "0.5", nullptr);
  EXPECT_EQ(scale.shape(), Shape{1});
  EXPECT_EQ(scale.data<float>()[0], 0.5f);
  EXPECT_EQ(read_input_value(declared("t", DType::Float64, {}), "-1e-3", nullptr).data<double>()[0], -1e-3);
  EXPECT_TRUE(read_input_value(declared("flag", DType::Bool, {}), "true", nullptr).data<bool>()[0]);
  EXPECT_EQ(read_input_value(declared("k", DType::Int8, {}), "-128", nullptr).data<int8_t>()[0], -128);
  ValueInfo undeclared;
  undeclared.name = "u";
  EXPECT_EQ(read_input_value(undeclared, "2", nullptr).dtype(), DType::Float32);
}

TEST(ScalarInput, RejectsValuesThatDoNotFit) {
  expect_error([] { read_input_value(declared("x", DType::Float32, {1, 4}), "0.5", nullptr); },
               {"input 'x' (0.5)", "scalar input", "1x4"});
  expect_error([] { read_input_value(declared("sr", DType::Int64, {}), "16000.5", nullptr); }, {"input 'sr' (16000.5)", "integer"});
  expect_error([] { read_input_value(declared("k", DType::Int8, {}), "300", nullptr); }, {"300 does not fit int8"});
  expect_error([] { read_input_value(declared("k", DType::UInt8, {}), "-1", nullptr); }, {"-1 does not fit uint8"});
  expect_error([] { read_input_value(declared("k", DType::Int64, {}), "true", nullptr); }, {"not bool"});
  expect_error([] { read_input_value(declared("b", DType::Bool, {}), "2", nullptr); }, {"true, false, 1 or 0"});
  expect_error([] { read_input_value(declared("x", DType::Float32, {}), "abc", nullptr); },
               {"input 'x' (abc)", "neither a number nor a file"});
  const Preprocess p = parse_preprocess("scale=2", "x");
  expect_error([&] { read_input_value(declared("x", DType::Float32, {}), "2", &p); }, {"input 'x'", "--preprocess applies to images"});
  TempDir dir;
  std::ofstream(dir / "data.bin") << "1234";
  expect_error([&] { read_input_value(declared("x", DType::Float32, {}), (dir / "data.bin").string(), nullptr); },
               {"input 'x'", "data.bin", "unsupported file type '.bin'"});
  expect_error([&] { read_input_value(declared("x", DType::Float32, {1, 3, 2, 2}), (dir / "missing.png").string(), nullptr); },
               {"input 'x'", "missing.png", "no such file"});
}

// [SECTION] Symbolic dims bound by the inputs given

namespace {

// a [batch, seq] and b [batch, seq, 4] float, c [batch] int64; y = a + ReduceSum(b over the last axis).
std::shared_ptr<const Graph> symbolic_model() {
  ModelBuilder m;
  m.input("a", onnx::TensorProto::FLOAT, {-1, -1});
  m.input("b", onnx::TensorProto::FLOAT, {-1, -1, 4});
  m.input("c", onnx::TensorProto::INT64, {-1});
  auto name_dims = [&](int input, const std::vector<std::string>& names) {
    auto* shape = m.graph().mutable_input(input)->mutable_type()->mutable_tensor_type()->mutable_shape();
    for (size_t i = 0; i < names.size(); ++i) shape->mutable_dim(static_cast<int>(i))->set_dim_param(names[i]);
  };
  name_dims(0, {"batch", "seq"});
  name_dims(1, {"batch", "seq"});
  name_dims(2, {"batch"});
  m.node("Identity", {"a"}, {"y"});
  m.output("y");
  return load_model_from_bytes(m.bytes(), ".", "sym.onnx").graph;
}

}  // namespace

TEST(SymbolicDims, GivenInputsBindThemForRandomInputs) {
  TempDir dir;
  const auto graph = symbolic_model();
  write_npy(dir / "a.npy", Tensor::zeros(DType::Float32, {2, 7}));
  InputOptions o;
  o.files = {"a=" + (dir / "a.npy").string()};
  o.random = true;
  const TensorMap feeds = SampleSource(*graph, o).sample(0);
  EXPECT_EQ(feeds.at("b").shape(), (Shape{2, 7, 4}));
  EXPECT_EQ(feeds.at("c").shape(), (Shape{2}));
  // --shape binds them too; unbound dims stay 1.
  InputOptions s;
  s.random = true;
  s.shapes = {"b=3x5x4"};
  const TensorMap shaped = SampleSource(*graph, s).sample(0);
  EXPECT_EQ(shaped.at("a").shape(), (Shape{3, 5}));
  InputOptions none;
  none.random = true;
  EXPECT_EQ(SampleSource(*graph, none).sample(0).at("a").shape(), (Shape{1, 1}));
}

TEST(SymbolicDims, ConflictingBindingsAreAnError) {
  TempDir dir;
  const auto graph = symbolic_model();
  write_npy(dir / "a.npy", Tensor::zeros(DType::Float32, {1, 512}));
  write_npy(dir / "b.npy", Tensor::zeros(DType::Float32, {1, 256, 4}));
  InputOptions o;
  o.files = {"a=" + (dir / "a.npy").string(), "b=" + (dir / "b.npy").string()};
  o.random = true;
  expect_error([&] { SampleSource(*graph, o).sample(0); },
               {"symbolic dimension 'seq'", "512 in input 'a' (", "a.npy", "256 in input 'b' (", "b.npy"});
  InputOptions s;
  s.files = {"a=" + (dir / "a.npy").string()};
  s.shapes = {"b=1x9x4"};
  s.random = true;
  expect_error([&] { SampleSource(*graph, s).sample(0); }, {"symbolic dimension 'seq'", "512", "9 in --shape b=1x9x4"});
}
