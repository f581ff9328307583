// An ONNX model's bytes, loaded as the CLI loads a model (default LoadLimits), then turned into a runtime
// Session: creating each node's kernel reads its attributes and checks its inputs, which hostile files reach too.
#include <filesystem>

#include "model/loader.h"
#include "runtime/session.h"
#include "tests/fuzz/fuzz_support.h"

namespace {

// External data must resolve inside the model's folder: an empty one, so that every reference is refused.
const std::filesystem::path& empty_model_folder() {
  static const mpa::fuzz::TemporaryPath folder("mpaudit-fuzz-model");
  std::filesystem::create_directories(folder.path);
  return folder.path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  mpa::fuzz::refusing_bad_input([&] {
    const mpa::Model model =
        mpa::load_model_from_bytes(mpa::fuzz::as_string(data, size), empty_model_folder(), "fuzz.onnx");
    const mpa::Session session(model.graph);
  });
  return 0;
}
