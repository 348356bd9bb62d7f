// CRC-32C (Castagnoli, the iSCSI/ext4 checksum): the checksum of checkpoint manifests, fast enough to read
// back gigabyte checkpoints (SSE4.2's crc32 instruction where the CPU has it, slicing-by-8 elsewhere).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

namespace berth {

// Continues a CRC-32C over `size` bytes: crc32c(crc32c(0, a), b) == crc32c(0, a + b). Start with 0.
uint32_t crc32c(uint32_t crc, const void* data, size_t size);

// The portable table-driven version (what crc32c uses without SSE4.2); exposed so tests compare the two.
uint32_t crc32c_portable(uint32_t crc, const void* data, size_t size);

// The CRC-32C and size of a file's bytes, read in 1 MiB blocks. Throws berth::Error naming the path when it
// cannot be read.
struct FileChecksum {
  uint64_t size = 0;
  uint32_t crc32c = 0;
};
FileChecksum crc32c_file(const std::string& path);

// "0x" and 8 lowercase hex digits, as manifests and messages write a CRC.
std::string crc32c_hex(uint32_t crc);

}  // namespace berth
