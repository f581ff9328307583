#include <gtest/gtest.h>

#include "io/npy.h"
#include "support/model_builder.h"

using namespace mpa;

TEST(Npy, RoundTripsEveryDtypeAndShape) {
  mpa::test::TempDir dir;
  const std::vector<Tensor> tensors = {
      Tensor::from_vector<float>({1.5f, -2.f, 3.f, 4.f, 5.f, 6.f}, {2, 3}),
      Tensor::from_vector<double>({0.1}, {}),
      Tensor::from_vector<int64_t>({-1, 2, 3}, {3}),
      Tensor::from_vector<int8_t>({-7, 8}, {1, 2}),
      Tensor::from_vector<uint16_t>({1, 65535}, {2, 1}),
      Tensor::from_vector<bool>({true, false, true}, {3}),
      Tensor::from_vector<float>({}, {0, 4}),
  };
  for (const Tensor& t : tensors) {
    write_npy(dir / "t.npy", t);
    const Tensor back = read_npy(dir / "t.npy");
    EXPECT_EQ(back.dtype(), t.dtype());
    EXPECT_EQ(back.shape(), t.shape());
    EXPECT_EQ(back.to_double_vector(), t.to_double_vector());
  }
}

TEST(Npy, HeaderIsAlignedTo64Bytes) {
  const std::string bytes = serialize_npy(Tensor::from_vector<float>({1, 2, 3}, {3}));
  const size_t header_len = static_cast<unsigned char>(bytes[8]) | (static_cast<unsigned char>(bytes[9]) << 8);
  EXPECT_EQ((10 + header_len) % 64, 0u);
  EXPECT_EQ(bytes.size(), 10 + header_len + 12);
}

TEST(Npy, RejectsTruncatedAndForeignFiles) {
  std::string bytes = serialize_npy(Tensor::from_vector<float>({1, 2, 3}, {3}));
  EXPECT_THROW(parse_npy(bytes.substr(0, bytes.size() - 1), "x.npy"), Error);
  EXPECT_THROW(parse_npy("hello world, not numpy", "x.npy"), Error);
  std::string fortran = bytes;
  fortran.replace(fortran.find("False"), 5, "True ");
  EXPECT_THROW(parse_npy(fortran, "x.npy"), Error);
  std::string big_endian = bytes;
  big_endian.replace(big_endian.find("<f4"), 3, ">f4");
  EXPECT_THROW(parse_npy(big_endian, "x.npy"), Error);
}
