// A .npy file as `--input NAME=FILE.npy` reads it.
#include "io/npy.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = mpa::fuzz::input_file(mpa::fuzz::as_string(data, size), ".npy");
  mpa::fuzz::refusing_bad_input([&] { mpa::read_npy(file); });
  return 0;
}
