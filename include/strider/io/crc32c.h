#pragma once
// CRC-32C (Castagnoli), the checksum of checkpoint blocks: the SSE4.2 crc32 instruction takes 8
// bytes at a time, so checking every byte a save writes or a load reads stays cheap next to the
// I/O (a table fallback serves CPUs without it). Same values as iSCSI, ext4 and Google's crc32c
// ("123456789" -> 0xe3069283).
#include <cstddef>
#include <cstdint>
#include <string>

namespace strider::io {

// Continues `crc` (0 for a fresh checksum) over `bytes` bytes.
uint32_t crc32c(uint32_t crc, const void* data, size_t bytes);
// As 8 lowercase hex digits, the form manifests store.
std::string crc32c_hex(uint32_t crc);

}  // namespace strider::io
