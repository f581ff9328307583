// An .npz archive as `--inputs FILE.npz` reads it (libzip, then each member's .npy header and data).
#include "io/npy.h"
#include "tests/fuzz/fuzz_support.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto file = mpa::fuzz::input_file(mpa::fuzz::as_string(data, size), ".npz");
  mpa::fuzz::refusing_bad_input([&] { mpa::read_npz(file); });
  return 0;
}
