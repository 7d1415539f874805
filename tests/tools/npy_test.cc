// .npy reader/writer of the trnmx program against files written by NumPy
// 2.4.6 (tests/data/npy, made with np.save / numpy.lib.format.write_array)
// and against corrupt variants made here.
#include "npy.h"

#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <string>
#include <vector>

namespace trnmx::cli {
namespace {

const std::string kDataDir = TRNMX_TEST_DATA_DIR "/npy/";

std::vector<std::uint8_t> Load(const std::string& file) {
  StatusOr<std::vector<std::uint8_t>> bytes = ReadFileBytes(kDataDir + file);
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<std::uint8_t>{};
}

std::vector<float> Floats(const NpyArray& a) {
  std::vector<float> out(a.data.size() / 4);
  std::memcpy(out.data(), a.data.data(), a.data.size());
  return out;
}

TEST(Npy, ReadsNumpyFloat32CAndFortranOrder) {
  const std::vector<float> want = {1.5f, -2.0f, 3.25f, 0.0f, -0.0f, 448.0f};
  for (const char* file : {"f4_2x3.npy", "f4_2x3_fortran.npy"}) {
    StatusOr<NpyArray> a = ParseNpy(Load(file), file);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(a->dtype, NpyDtype::kFloat32);
    EXPECT_EQ(a->shape, (std::vector<std::size_t>{2, 3}));
    EXPECT_EQ(a->rows(), 2u);
    EXPECT_EQ(a->cols(), 3u);
    const std::vector<float> got = Floats(*a);
    ASSERT_EQ(got.size(), want.size());
    for (std::size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(std::bit_cast<std::uint32_t>(got[i]), std::bit_cast<std::uint32_t>(want[i])) << file << " " << i;
    }
  }
}

TEST(Npy, ReadsUint16AsBf16Float16AndVersion2) {
  StatusOr<NpyArray> u2 = ParseNpy(Load("u2_5.npy"), "u2");
  ASSERT_TRUE(u2.ok()) << u2.status().ToString();
  EXPECT_EQ(u2->dtype, NpyDtype::kBf16AsUint16);
  EXPECT_EQ(u2->rows(), 1u);
  EXPECT_EQ(u2->cols(), 5u);
  EXPECT_EQ(u2->data[0] | (u2->data[1] << 8), 0x3F80);
  EXPECT_EQ(u2->data[8] | (u2->data[9] << 8), 0x7FC0);

  StatusOr<NpyArray> f2 = ParseNpy(Load("f2_2x2.npy"), "f2");
  ASSERT_TRUE(f2.ok()) << f2.status().ToString();
  EXPECT_EQ(f2->dtype, NpyDtype::kFloat16);
  EXPECT_EQ(f2->data[4] | (f2->data[5] << 8), 0x7BFF);  // 65504

  StatusOr<NpyArray> v2 = ParseNpy(Load("f4_3_v2.npy"), "v2");
  ASSERT_TRUE(v2.ok()) << v2.status().ToString();
  EXPECT_EQ(Floats(*v2), (std::vector<float>{1.0f, 2.0f, 3.0f}));
}

TEST(Npy, WritesTheSameBytesAsNumpy) {
  for (const char* file : {"f4_2x3.npy", "u2_5.npy", "f2_2x2.npy"}) {
    const std::vector<std::uint8_t> bytes = Load(file);
    StatusOr<NpyArray> a = ParseNpy(bytes, file);
    ASSERT_TRUE(a.ok()) << a.status().ToString();
    EXPECT_EQ(SerializeNpy(*a), bytes) << file;
  }
  // Fortran input is written back C-order: same bytes as the C-order file.
  StatusOr<NpyArray> f = ParseNpy(Load("f4_2x3_fortran.npy"), "fortran");
  ASSERT_TRUE(f.ok());
  EXPECT_EQ(SerializeNpy(*f), Load("f4_2x3.npy"));
}

void ExpectError(const std::vector<std::uint8_t>& bytes, const std::string& needle) {
  StatusOr<NpyArray> a = ParseNpy(bytes, "x.npy");
  ASSERT_FALSE(a.ok()) << "expected an error containing '" << needle << "'";
  EXPECT_NE(a.status().message().find(needle), std::string::npos) << a.status().message();
  EXPECT_NE(a.status().message().find("x.npy"), std::string::npos) << a.status().message();
}

TEST(Npy, RejectsMalformedFiles) {
  const std::vector<std::uint8_t> good = Load("f4_2x3.npy");
  ExpectError({}, "magic");
  ExpectError({'P', 'K', 3, 4, 0, 0, 0, 0, 0, 0}, "magic");
  for (std::size_t n : {std::size_t{7}, std::size_t{9}, std::size_t{50}, good.size() - 1}) {
    ExpectError(std::vector<std::uint8_t>(good.begin(), good.begin() + static_cast<std::ptrdiff_t>(n)),
                "truncated");
  }
  std::vector<std::uint8_t> longer = good;
  longer.push_back(0);
  ExpectError(longer, "trailing bytes");
  std::vector<std::uint8_t> v9 = good;
  v9[6] = 9;
  ExpectError(v9, "version 9.0");
  std::vector<std::uint8_t> bad_dict = good;
  bad_dict[10] = '[';
  ExpectError(bad_dict, "dictionary");
  std::vector<std::uint8_t> big_endian = good;
  big_endian[21] = '>';  // '<f4' -> '>f4'
  ExpectError(big_endian, "'>f4' is not supported");
  ExpectError(Load("f8_2.npy"), "'<f8' is not supported");
  ExpectError(Load("f4_2x2x2.npy"), "1 or 2 dimensions");
  const std::string header(good.begin() + 10, good.begin() + 128);
  std::string broken = header;
  broken.replace(broken.find("(2, 3)"), 6, "(2, x)");
  std::vector<std::uint8_t> shape_bytes(good.begin(), good.begin() + 10);
  shape_bytes.insert(shape_bytes.end(), broken.begin(), broken.end());
  shape_bytes.insert(shape_bytes.end(), good.begin() + 128, good.end());
  ExpectError(shape_bytes, "'shape' is not a tuple");
}

TEST(Npy, WriteFileAtomicallyRoundTrips) {
  const std::string path = ::testing::TempDir() + "npy_roundtrip.npy";
  const std::vector<std::uint8_t> bytes = Load("f4_2x3.npy");
  ASSERT_TRUE(WriteFileAtomically(path, bytes).ok());
  StatusOr<std::vector<std::uint8_t>> back = ReadFileBytes(path);
  ASSERT_TRUE(back.ok());
  EXPECT_EQ(*back, bytes);
  EXPECT_FALSE(ReadFileBytes(path + ".missing").ok());
  EXPECT_FALSE(WriteFileAtomically("/nonexistent-dir/x.npy", bytes).ok());
}

}  // namespace
}  // namespace trnmx::cli
