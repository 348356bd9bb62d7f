// CRC-32C: the check values published with the algorithm (RFC 3720 appendix B.4's iSCSI test vectors and the
// CRC catalogue's "123456789"), the SSE4.2 path equal to the portable tables at every length and alignment,
// chaining, and files.
#include "berth/core/crc32c.h"

#include <gtest/gtest.h>

#include <fstream>
#include <numeric>
#include <random>
#include <string>
#include <vector>

#include "berth/core/error.h"
#include "support/test_support.h"

namespace berth {
namespace {

using berth::testing::TempDir;

std::vector<unsigned char> crc32c_bytes(size_t size, unsigned char fill) {
  return std::vector<unsigned char>(size, fill);
}

TEST(Crc32c, GivesThePublishedCheckValues) {
  // RFC 3720, B.4: 32 bytes of zeros, of ones, ascending and descending.
  const auto zeros = crc32c_bytes(32, 0x00);
  const auto ones = crc32c_bytes(32, 0xFF);
  std::vector<unsigned char> ascending(32);
  std::iota(ascending.begin(), ascending.end(), 0);
  const std::vector<unsigned char> descending(ascending.rbegin(), ascending.rend());
  for (auto* fn : {&crc32c, &crc32c_portable}) {
    EXPECT_EQ(fn(0, zeros.data(), zeros.size()), 0x8A9136AAu);
    EXPECT_EQ(fn(0, ones.data(), ones.size()), 0x62A8AB43u);
    EXPECT_EQ(fn(0, ascending.data(), ascending.size()), 0x46DD794Eu);
    EXPECT_EQ(fn(0, descending.data(), descending.size()), 0x113FDB5Cu);
    EXPECT_EQ(fn(0, "123456789", 9), 0xE3069283u);
    EXPECT_EQ(fn(0, "", 0), 0u);
  }
  EXPECT_EQ(crc32c_hex(0xE3069283u), "0xe3069283");
}

TEST(Crc32c, HardwareAndPortableAgreeAtEveryLengthAndAlignmentAndChain) {
  std::mt19937 rng(5);
  std::vector<unsigned char> data(3 * 4096 * 3 + 16);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  for (size_t offset = 0; offset < 8; ++offset)
    for (size_t size :
         {0, 1, 7, 8, 9, 15, 16, 63, 64, 65, 1000, 4096, 3 * 4096 - 1, 3 * 4096, 3 * 4096 * 3 + 5}) {
      const unsigned char* p = data.data() + offset;
      const uint32_t whole = crc32c_portable(0, p, size);
      EXPECT_EQ(crc32c(0, p, size), whole) << "offset " << offset << " size " << size;
      const size_t cut = size / 3;
      EXPECT_EQ(crc32c(crc32c(0, p, cut), p + cut, size - cut), whole) << "chained at " << cut;
    }
}

TEST(Crc32c, ChecksumsAFileAcrossBlocksAndNamesAMissingOne) {
  TempDir dir;
  std::vector<unsigned char> data((1 << 20) * 2 + 13);
  std::mt19937 rng(9);
  for (auto& b : data) b = static_cast<unsigned char>(rng());
  std::ofstream(dir.file("blob"), std::ios::binary)
      .write(reinterpret_cast<const char*>(data.data()), static_cast<std::streamsize>(data.size()));
  const FileChecksum sum = crc32c_file(dir.file("blob"));
  EXPECT_EQ(sum.size, data.size());
  EXPECT_EQ(sum.crc32c, crc32c_portable(0, data.data(), data.size()));
  const std::string message = berth::testing::error_text([&] { crc32c_file(dir.file("missing")); });
  berth::testing::expect_contains(message, {dir.file("missing"), "cannot open it to check its checksum",
                                            "No such file or directory", "Fix:"});
}

}  // namespace
}  // namespace berth
