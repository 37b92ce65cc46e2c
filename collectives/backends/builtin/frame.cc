#include "collectives/backends/builtin/frame.h"

#include <cstdio>
#include <cstring>
#include <string>

namespace hora {
namespace collectives {
namespace builtin {
namespace {

void put32(uint8_t* p, uint32_t v) { std::memcpy(p, &v, 4); }
void put64(uint8_t* p, uint64_t v) { std::memcpy(p, &v, 8); }
uint32_t get32(const uint8_t* p) {
  uint32_t v;
  std::memcpy(&v, p, 4);
  return v;
}
uint64_t get64(const uint8_t* p) {
  uint64_t v;
  std::memcpy(&v, p, 8);
  return v;
}

// A mix of the fields, so that a flipped bit anywhere in the header is caught.
uint32_t check_word(uint32_t tag, uint64_t bytes) {
  uint64_t h = 0x9e3779b97f4a7c15ull ^ (uint64_t{tag} * 0xff51afd7ed558ccdull);
  h ^= bytes + 0xc4ceb9fe1a85ec53ull + (h << 6) + (h >> 2);
  h ^= h >> 33;
  h *= 0xff51afd7ed558ccdull;
  h ^= h >> 33;
  return static_cast<uint32_t>(h) ^ static_cast<uint32_t>(h >> 32);
}

}  // namespace

void encode_frame_header(const FrameHeader& header, uint8_t* out) {
  put32(out, kFrameMagic);
  put32(out + 4, header.tag);
  put64(out + 8, header.bytes);
  put32(out + 16, check_word(header.tag, header.bytes));
  put32(out + 20, 0);
}

StatusOr<FrameHeader> parse_frame_header(const uint8_t* in, uint64_t max_bytes, int peer) {
  const std::string from = "corrupted frame header from rank " + std::to_string(peer) + ": ";
  if (get32(in) != kFrameMagic) {
    char buf[16];
    std::snprintf(buf, sizeof buf, "0x%08x", get32(in));
    return Status::io(from + "bad magic " + buf);
  }
  FrameHeader header;
  header.tag = get32(in + 4);
  header.bytes = get64(in + 8);
  if (get32(in + 16) != check_word(header.tag, header.bytes) || get32(in + 20) != 0) {
    return Status::io(from + "check word mismatch (tag " + std::to_string(header.tag) + ", bytes " +
                      std::to_string(header.bytes) + ")");
  }
  if (header.bytes > max_bytes) {
    return Status::io(from + "message of " + std::to_string(header.bytes) +
                      " bytes exceeds the limit of " + std::to_string(max_bytes));
  }
  return header;
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
