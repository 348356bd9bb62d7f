// CRC-32C: the reflected Castagnoli polynomial 0x82F63B78, by SSE4.2's crc32 instruction (8 bytes at a time)
// when the CPU has it, otherwise by slicing-by-8 tables.
#include "berth/core/crc32c.h"

#include <array>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <vector>

#if defined(__x86_64__)
#include <nmmintrin.h>
#endif

#include "berth/core/error.h"

namespace berth {
namespace {

constexpr uint32_t kPolynomial = 0x82F63B78u;  // 0x1EDC6F41 bit-reversed

using Tables = std::array<std::array<uint32_t, 256>, 8>;

// tables[0] is the byte-at-a-time table; tables[k][b] is byte b's CRC followed by k zero bytes, so eight
// lookups advance the CRC by eight bytes.
constexpr Tables make_tables() {
  Tables tables{};
  for (uint32_t b = 0; b < 256; ++b) {
    uint32_t crc = b;
    for (int bit = 0; bit < 8; ++bit) crc = (crc >> 1) ^ ((crc & 1u) ? kPolynomial : 0u);
    tables[0][b] = crc;
  }
  for (size_t k = 1; k < 8; ++k)
    for (uint32_t b = 0; b < 256; ++b)
      tables[k][b] = (tables[k - 1][b] >> 8) ^ tables[0][tables[k - 1][b] & 0xFFu];
  return tables;
}

constexpr Tables kTables = make_tables();

uint32_t load_le32(const unsigned char* p) {
  return static_cast<uint32_t>(p[0]) | static_cast<uint32_t>(p[1]) << 8 | static_cast<uint32_t>(p[2]) << 16 |
         static_cast<uint32_t>(p[3]) << 24;
}

// The raw register (no inversions) after `zeros` zero bytes: linear in the register, so a table per byte
// of it. Three streams over consecutive blocks combine as shift(a, 2L) ^ shift(b, L) ^ c.
struct ShiftTables {
  std::array<std::array<uint32_t, 256>, 4> byte{};
  explicit ShiftTables(size_t zeros) {
    std::array<uint32_t, 32> column{};
    for (int bit = 0; bit < 32; ++bit) {
      uint32_t crc = 1u << bit;
      for (size_t i = 0; i < zeros; ++i) crc = (crc >> 8) ^ kTables[0][crc & 0xFF];
      column[static_cast<size_t>(bit)] = crc;
    }
    for (size_t k = 0; k < 4; ++k)
      for (uint32_t b = 0; b < 256; ++b) {
        uint32_t crc = 0;
        for (int bit = 0; bit < 8; ++bit)
          if (b & (1u << bit)) crc ^= column[k * 8 + static_cast<size_t>(bit)];
        byte[k][b] = crc;
      }
  }
  uint32_t shift(uint32_t crc) const {
    return byte[0][crc & 0xFF] ^ byte[1][(crc >> 8) & 0xFF] ^ byte[2][(crc >> 16) & 0xFF] ^
           byte[3][crc >> 24];
  }
};

#if defined(__x86_64__)
constexpr size_t kStreamBlock =
    4096;  // bytes per stream; three run side by side (crc32 has 3 cycles latency)

__attribute__((target("sse4.2"))) uint32_t crc32c_sse42(uint32_t crc, const unsigned char* p, size_t size) {
  static const ShiftTables by_one(kStreamBlock);
  static const ShiftTables by_two(2 * kStreamBlock);
  uint64_t a = ~crc;
  for (; size >= 3 * kStreamBlock; size -= 3 * kStreamBlock, p += 3 * kStreamBlock) {
    uint64_t b = 0;
    uint64_t c = 0;
    for (size_t i = 0; i < kStreamBlock; i += 8) {
      uint64_t wa, wb, wc;
      std::memcpy(&wa, p + i, 8);
      std::memcpy(&wb, p + kStreamBlock + i, 8);
      std::memcpy(&wc, p + 2 * kStreamBlock + i, 8);
      a = _mm_crc32_u64(a, wa);
      b = _mm_crc32_u64(b, wb);
      c = _mm_crc32_u64(c, wc);
    }
    a = by_two.shift(static_cast<uint32_t>(a)) ^ by_one.shift(static_cast<uint32_t>(b)) ^
        static_cast<uint32_t>(c);
  }
  for (; size >= 8; size -= 8, p += 8) {
    uint64_t word;
    std::memcpy(&word, p, 8);
    a = _mm_crc32_u64(a, word);
  }
  auto small = static_cast<uint32_t>(a);
  for (; size > 0; --size, ++p) small = _mm_crc32_u8(small, *p);
  return ~small;
}

bool cpu_has_sse42() {
  static const bool has = __builtin_cpu_supports("sse4.2");
  return has;
}
#endif

}  // namespace

uint32_t crc32c_portable(uint32_t crc, const void* data, size_t size) {
  const auto* p = static_cast<const unsigned char*>(data);
  crc = ~crc;
  for (; size >= 8; size -= 8, p += 8) {
    const uint32_t low = crc ^ load_le32(p);
    const uint32_t high = load_le32(p + 4);
    crc = kTables[7][low & 0xFF] ^ kTables[6][(low >> 8) & 0xFF] ^ kTables[5][(low >> 16) & 0xFF] ^
          kTables[4][low >> 24] ^ kTables[3][high & 0xFF] ^ kTables[2][(high >> 8) & 0xFF] ^
          kTables[1][(high >> 16) & 0xFF] ^ kTables[0][high >> 24];
  }
  for (; size > 0; --size, ++p) crc = (crc >> 8) ^ kTables[0][(crc ^ *p) & 0xFF];
  return ~crc;
}

uint32_t crc32c(uint32_t crc, const void* data, size_t size) {
#if defined(__x86_64__)
  if (cpu_has_sse42()) return crc32c_sse42(crc, static_cast<const unsigned char*>(data), size);
#endif
  return crc32c_portable(crc, data, size);
}

FileChecksum crc32c_file(const std::string& path) {
  std::FILE* file = std::fopen(path.c_str(), "rb");
  BERTH_CHECK(file != nullptr, path, ": cannot open it to check its checksum (", std::strerror(errno),
              "). Fix: check that the file exists and is readable");
  FileChecksum sum;
  std::vector<unsigned char> block(1 << 20);
  size_t got = 0;
  while ((got = std::fread(block.data(), 1, block.size(), file)) > 0) {
    sum.crc32c = crc32c(sum.crc32c, block.data(), got);
    sum.size += got;
  }
  const bool failed = std::ferror(file) != 0;
  const std::string reason = std::strerror(errno);
  std::fclose(file);
  BERTH_CHECK(!failed, path, ": reading it failed after ", sum.size, " bytes (", reason,
              "). Fix: check the disk (dmesg) or restore the file");
  return sum;
}

std::string crc32c_hex(uint32_t crc) {
  char text[11];
  std::snprintf(text, sizeof text, "0x%08x", crc);
  return text;
}

}  // namespace berth
