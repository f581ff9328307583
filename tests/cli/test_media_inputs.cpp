// The input helpers through the real binary: images with --preprocess, WAV files, numbers for scalar inputs
// and symbolic dims bound by the inputs given, for `run` and `audit`; every bad input is one line, exit 2.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "io/npy.h"
#include "support/media_files.h"
#include "support/run_cli.h"

using namespace mpa::test;

namespace {

std::vector<uint8_t> gradient(int height, int width) {
  std::vector<uint8_t> p;
  for (int y = 0; y < height; ++y)
    for (int x = 0; x < width; ++x)
      for (int c = 0; c < 3; ++c) p.push_back(static_cast<uint8_t>(40 * c + 7 * y + 3 * x));
  return p;
}

// image [1, 3, 4, 6] -> Identity -> y.
ModelBuilder image_model() {
  ModelBuilder b;
  b.input("image", onnx::TensorProto::FLOAT, {1, 3, 4, 6});
  b.node("Identity", {"image"}, {"y"}, "copy");
  b.output("y");
  return b;
}

// audio [1, N] float and sr int64 scalar: y = audio * float(sr).
ModelBuilder audio_model() {
  ModelBuilder b;
  b.input("audio", onnx::TensorProto::FLOAT, {1, -1});
  b.input("sr", onnx::TensorProto::INT64, {});
  onnx::NodeProto& cast = b.node("Cast", {"sr"}, {"sr_f"}, "to_float");
  auto* to = cast.add_attribute();
  to->set_name("to");
  to->set_type(onnx::AttributeProto::INT);
  to->set_i(onnx::TensorProto::FLOAT);
  b.node("Mul", {"audio", "sr_f"}, {"y"}, "scale");
  b.output("y");
  return b;
}

// a [batch, seq] + b [batch, seq].
ModelBuilder symbolic_model() {
  ModelBuilder b;
  b.input("a", onnx::TensorProto::FLOAT, {-1, -1});
  b.input("b", onnx::TensorProto::FLOAT, {-1, -1});
  for (int i = 0; i < 2; ++i) {
    auto* shape = b.graph().mutable_input(i)->mutable_type()->mutable_tensor_type()->mutable_shape();
    shape->mutable_dim(0)->set_dim_param("batch");
    shape->mutable_dim(1)->set_dim_param("seq");
  }
  b.node("Add", {"a", "b"}, {"y"}, "add");
  b.output("y");
  return b;
}

std::string path(const TempDir& dir, const std::string& name) { return (dir / name).string(); }

}  // namespace

TEST(MediaInputs, ImageIsResizedNormalisedAndFedToRunAndAudit) {
  TempDir dir;
  image_model().save(dir / "m.onnx");
  write_whole_file(dir / "in.png", png_bytes(6, 4, 3, gradient(4, 6)));
  write_whole_file(dir / "big.bmp", bmp_bytes(12, 8, gradient(8, 12)));
  const std::string model = path(dir, "m.onnx");
  CliResult r = run_cli(dir, "run " + model + " --input image=" + path(dir, "in.png") +
                                 " --preprocess image:scale=1/255,mean=0.5,std=0.25,bgr --save-inputs " + path(dir, "in") +
                                 " --save-outputs " + path(dir, "out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_NE(r.out.find("saved 1 inputs"), std::string::npos) << r.out;
  const mpa::Tensor y = mpa::read_npy(dir / "out" / "y.npy");
  ASSERT_EQ(y.shape(), (mpa::Shape{1, 3, 4, 6}));
  // Channel 0 is blue (80 + 7y + 3x) after bgr; pixel (y=2, x=5).
  EXPECT_FLOAT_EQ(y.data<float>()[0 * 24 + 2 * 6 + 5], (static_cast<float>(80 + 14 + 15) / 255.f - 0.5f) / 0.25f);
  EXPECT_EQ(mpa::read_npy(dir / "in" / "image.npy").to_double_vector(), y.to_double_vector());
  // A larger BMP is resized to the declared 4x6.
  r = run_cli(dir, "run " + model + " --input image=" + path(dir, "big.bmp") + " --save-outputs " + path(dir, "out2"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(mpa::read_npy(dir / "out2" / "y.npy").shape(), (mpa::Shape{1, 3, 4, 6}));
  r = run_cli(dir, "audit " + model + " --input image=" + path(dir, "in.png") + " --preprocess image:scale=1/255 --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(MediaInputs, WavAndScalarInputs) {
  TempDir dir;
  audio_model().save(dir / "m.onnx");
  std::vector<float> stereo;
  for (int i = 0; i < 8; ++i) {
    stereo.push_back(static_cast<float>(i) / 16.f);
    stereo.push_back(-static_cast<float>(i) / 16.f);
  }
  write_whole_file(dir / "stereo.wav", wav_bytes(1, 16, 2, 16000, stereo));
  const std::string model = path(dir, "m.onnx");
  CliResult r = run_cli(dir, "run " + model + " --input audio=" + path(dir, "stereo.wav") +
                                 " --preprocess audio:mono --input sr=16000 --save-outputs " + path(dir, "out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(mpa::read_npy(dir / "out" / "y.npy").to_double_vector(), std::vector<double>(8, 0.0));
  write_whole_file(dir / "mono.wav", wav_bytes(3, 32, 1, 16000, {0.25f, 0.5f, -0.125f, 1.f}));
  r = run_cli(dir, "run " + model + " --input audio=" + path(dir, "mono.wav") +
                       " --preprocess audio:offset=1,length=2 --input sr=8 --save-outputs " + path(dir, "out"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const mpa::Tensor y = mpa::read_npy(dir / "out" / "y.npy");
  EXPECT_EQ(y.shape(), (mpa::Shape{1, 2}));
  EXPECT_EQ(y.to_double_vector(), (std::vector<double>{4.0, -1.0}));
  r = run_cli(dir, "audit " + model + " --input audio=" + path(dir, "mono.wav") + " --input sr=16000 --quiet");
  EXPECT_EQ(r.exit_code, 0) << r.err;
}

TEST(MediaInputs, SymbolicDimsFollowTheInputsGiven) {
  TempDir dir;
  symbolic_model().save(dir / "m.onnx");
  mpa::write_npy(dir / "a.npy", mpa::Tensor::zeros(mpa::DType::Float32, {2, 5}));
  mpa::write_npy(dir / "b.npy", mpa::Tensor::zeros(mpa::DType::Float32, {2, 6}));
  const std::string model = path(dir, "m.onnx");
  CliResult r = run_cli(dir, "run " + model + " --input a=" + path(dir, "a.npy") + " --random-inputs --save-inputs " +
                                 path(dir, "in"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(mpa::read_npy(dir / "in" / "b.npy").shape(), (mpa::Shape{2, 5}));
  expect_clean_error(run_cli(dir, "run " + model + " --input a=" + path(dir, "a.npy") + " --input b=" + path(dir, "b.npy")),
                     {"m.onnx", "symbolic dimension 'seq'", "5 in input 'a'", "a.npy", "6 in input 'b'", "b.npy"});
  expect_clean_error(run_cli(dir, "audit " + model + " --input a=" + path(dir, "a.npy") + " --random-inputs --shape b=2x7 --quiet"),
                     {"symbolic dimension 'seq'", "7 in --shape b=2x7"});
}

TEST(MediaInputs, BadInputsAreOneLineNamingTheInputAndFile) {
  TempDir dir;
  image_model().save(dir / "img.onnx");
  audio_model().save(dir / "audio.onnx");
  const std::string img = path(dir, "img.onnx"), audio = path(dir, "audio.onnx");
  write_whole_file(dir / "fake.png", "this is not a png");
  write_whole_file(dir / "ok.png", png_bytes(6, 4, 3, gradient(4, 6)));
  write_whole_file(dir / "alaw.wav", wav_bytes(6, 8, 1, 8000, {0.f, 0.f}));
  write_whole_file(dir / "ok.wav", wav_bytes(1, 16, 1, 8000, {0.f, 0.5f}));
  write_whole_file(dir / "notes.txt", "hello");
  expect_clean_error(run_cli(dir, "run " + img + " --input image=" + path(dir, "fake.png")),
                     {"img.onnx", "input 'image'", "fake.png", "not a JPEG, PNG, BMP or binary PNM"});
  expect_clean_error(run_cli(dir, "run " + img + " --input image=" + path(dir, "missing.jpg")),
                     {"input 'image'", "missing.jpg", "no such file"});
  expect_clean_error(run_cli(dir, "run " + img + " --input image=" + path(dir, "ok.png") + " --preprocess image:resize=9x9"),
                     {"input 'image'", "ok.png", "resize=9x9", "1x3x4x6"});
  expect_clean_error(run_cli(dir, "run " + img + " --input image=" + path(dir, "ok.png") + " --preprocess image:bogus=1"),
                     {"--preprocess image", "unknown option 'bogus'"});
  expect_clean_error(run_cli(dir, "run " + img + " --input image=" + path(dir, "ok.png") + " --preprocess nosuch:scale=1"),
                     {"'nosuch' is not an input"});
  expect_clean_error(run_cli(dir, "run " + img + " --random-inputs --preprocess image:scale=1"),
                     {"--preprocess image", "not given an image or .wav file"});
  expect_clean_error(run_cli(dir, "run " + img + " --input image=0.5"), {"input 'image' (0.5)", "scalar input", "1x3x4x6"});
  expect_clean_error(run_cli(dir, "run " + img + " --input image=" + path(dir, "notes.txt")),
                     {"input 'image'", "notes.txt", "unsupported file type '.txt'"});
  expect_clean_error(run_cli(dir, "run " + audio + " --input audio=" + path(dir, "alaw.wav") + " --input sr=8000"),
                     {"audio.onnx", "input 'audio'", "alaw.wav", "A-law", "not supported"});
  expect_clean_error(run_cli(dir, "run " + audio + " --input audio=" + path(dir, "ok.wav") + " --input sr=16k"),
                     {"input 'sr' (16k)", "neither a number nor a file"});
  expect_clean_error(run_cli(dir, "run " + audio + " --input audio=" + path(dir, "ok.wav") + " --input sr=8000.5"),
                     {"input 'sr' (8000.5)", "int64", "integer"});
  expect_clean_error(run_cli(dir, "audit " + audio + " --input audio=" + path(dir, "ok.wav") +
                                      " --preprocess audio:resize=2x2 --input sr=8000 --quiet"),
                     {"input 'audio'", "ok.wav", "resize applies to images"});
}

// Issue 19: an image's size is checked from its header before anything is decoded, and data that ends before
// the image does is refused instead of decoded from missing bytes.
TEST(MediaInputs, ImageHeadersAreCheckedAndTruncatedImagesRefused) {
  TempDir dir;
  image_model().save(dir / "img.onnx");
  const std::string run = "run " + path(dir, "img.onnx") + " --input image=";
  std::string huge = bmp_bytes(4, 4, gradient(4, 4)).substr(0, 54);  // a 54-byte header claiming 16000x16000
  for (int i = 0; i < 4; ++i) huge[18 + i] = huge[22 + i] = static_cast<char>((16000 >> (8 * i)) & 0xFF);
  write_whole_file(dir / "huge.bmp", huge);
  expect_clean_error(run_cli(dir, run + path(dir, "huge.bmp")), {"huge.bmp", "16000x16000", "beyond the 67108864"});
  const std::string bmp = bmp_bytes(12, 8, gradient(8, 12));
  write_whole_file(dir / "cut.bmp", bmp.substr(0, bmp.size() / 2));
  expect_clean_error(run_cli(dir, run + path(dir, "cut.bmp")), {"cut.bmp", "truncated BMP"});
  const std::string jpg = jpg_bytes(6, 4, 3, gradient(4, 6));
  write_whole_file(dir / "cut.jpg", jpg.substr(0, jpg.size() - 40));
  expect_clean_error(run_cli(dir, run + path(dir, "cut.jpg")), {"cut.jpg", "truncated JPEG"});
  write_whole_file(dir / "cut.pnm.bmp", std::string("P6\n6 4\n255\n") + std::string(20, '\x7f'));
  expect_clean_error(run_cli(dir, run + path(dir, "cut.pnm.bmp")), {"cut.pnm.bmp", "holds a PNM image"});
  write_whole_file(dir / "ok.jpg", jpg);  // the whole file still runs
  EXPECT_EQ(run_cli(dir, run + path(dir, "ok.jpg")).exit_code, 0);
}

// Issue 19: the readers go by the extension and the image decoder by the content: a file whose content is
// another kind than its extension names is refused, saying both (before main decoded a JPEG named .png, or
// read a .npy named .jpg as "cannot decode image").
TEST(MediaInputs, ContentThatDisagreesWithTheExtensionIsRefusedNamingBoth) {
  TempDir dir;
  image_model().save(dir / "img.onnx");
  const std::string run = "run " + path(dir, "img.onnx") + " --input image=";
  write_whole_file(dir / "photo.png", jpg_bytes(6, 4, 3, gradient(4, 6)));
  expect_clean_error(run_cli(dir, run + path(dir, "photo.png")),
                     {"input 'image'", "photo.png", "holds a JPEG image, not a PNG image", "'.png'"});
  mpa::write_npy(dir / "array.npy", mpa::Tensor::zeros(mpa::DType::Float32, {1, 3, 4, 6}));
  std::filesystem::copy_file(dir / "array.npy", dir / "array.jpg");
  expect_clean_error(run_cli(dir, run + path(dir, "array.jpg")),
                     {"array.jpg", "holds a NumPy array (.npy), not a JPEG"});
  write_whole_file(dir / "picture.npy", png_bytes(6, 4, 3, gradient(4, 6)));
  expect_clean_error(run_cli(dir, run + path(dir, "picture.npy")), {"picture.npy", "holds a PNG image, not a NumPy"});
  write_whole_file(dir / "sound.bmp", wav_bytes(1, 16, 1, 8000, std::vector<float>(32, 0.f)));
  expect_clean_error(run_cli(dir, run + path(dir, "sound.bmp")), {"sound.bmp", "holds a WAV file, not a BMP image"});
  write_whole_file(dir / "upper.PNG", png_bytes(6, 4, 3, gradient(4, 6)));  // agreeing content runs
  EXPECT_EQ(run_cli(dir, run + path(dir, "upper.PNG")).exit_code, 0);
}

// Issue 19: an audio input is resampled to the model's rate and scaled to the range it expects: a 1 kHz sine recorded
// at 44.1 kHz in 16-bit PCM, fed as int16-range samples at 16 kHz, is saved as fed.
TEST(MediaInputs, WavIsResampledAndScaled) {
  TempDir dir;
  audio_model().save(dir / "m.onnx");
  std::vector<float> tone;
  for (int i = 0; i < 4410; ++i)
    tone.push_back(static_cast<float>(0.5 * std::sin(2 * std::numbers::pi * 1000 * i / 44100.0)));
  write_whole_file(dir / "tone.wav", wav_bytes(1, 16, 1, 44100, tone));
  const CliResult r =
      run_cli(dir, "run " + path(dir, "m.onnx") + " --input audio=" + path(dir, "tone.wav") +
                       " --preprocess audio:rate=16000,scale=32768 --input sr=1 --save-inputs " + path(dir, "in"));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const mpa::Tensor fed = mpa::read_npy(dir / "in" / "audio.npy");
  ASSERT_EQ(fed.shape(), (mpa::Shape{1, 1600}));  // 100 ms at 16 kHz
  const std::vector<double> v = fed.to_double_vector();
  double max_error = 0;
  for (size_t i = 320; i < 1280; ++i)  // the middle 60 ms, away from the file's edges
    max_error = std::max(
        max_error, std::abs(v[i] - 16384 * std::sin(2 * std::numbers::pi * 1000 * static_cast<double>(i) / 16000.0)));
  EXPECT_LT(max_error, 1.5) << "int16 units";  // the file's 16-bit truncation, up to 1 (measured: 0.89)
}

TEST(MediaInputs, BadAudioOptionsAreOneLineNamingTheInputAndOption) {
  TempDir dir;
  audio_model().save(dir / "audio.onnx");
  image_model().save(dir / "img.onnx");
  write_whole_file(dir / "ok.wav", wav_bytes(1, 16, 1, 8000, {0.f, 0.5f}));
  write_whole_file(dir / "ok.png", png_bytes(6, 4, 3, gradient(4, 6)));
  const std::string run = "run " + path(dir, "audio.onnx") + " --input sr=8000 --input audio=" + path(dir, "ok.wav") +
                          " --preprocess audio:";
  for (const char* option : {"rate=0", "rate=abc", "rate=768001", "rate=-1"})
    expect_clean_error(run_cli(dir, run + option), {"--preprocess audio", "bad rate", "1 to 768000"});
  for (const char* option : {"scale=nan", "scale=inf", "scale=1e308/1e-308"})
    expect_clean_error(run_cli(dir, run + option), {"--preprocess audio", "bad scale"});
  expect_clean_error(run_cli(dir, run + "rate=16000,rate=16000"), {"--preprocess audio", "'rate' is given twice"});
  expect_clean_error(run_cli(dir, run + "scale=2,scale=2"), {"--preprocess audio", "'scale' is given twice"});
  expect_clean_error(run_cli(dir, run + "rate=4000,offset=2"),
                     {"audio.onnx", "input 'audio'", "ok.wav", "offset 2 is past the end (1 frames at 4000 Hz)"});
  expect_clean_error(run_cli(dir, run + "rate=50"), {"input 'audio'", "ok.wav", "8000 Hz", "rate=50", "factor of 128"});
  // A 1.2 MB file asking for 76.8 million samples is refused before they are allocated.
  write_whole_file(dir / "long.wav", wav_bytes(1, 16, 1, 6000, std::vector<float>(600000, 0.f)));
  expect_clean_error(run_cli(dir, "run " + path(dir, "audio.onnx") + " --input sr=8000 --input audio=" +
                                      path(dir, "long.wav") + " --preprocess audio:rate=768000"),
                     {"input 'audio'", "long.wav", "rate=768000", "beyond the 67108864"});
  expect_clean_error(run_cli(dir, "run " + path(dir, "img.onnx") + " --input image=" + path(dir, "ok.png") +
                                      " --preprocess image:rate=16000"),
                     {"input 'image'", "ok.png", "rate applies to audio"});
}
