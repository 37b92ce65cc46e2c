// Wire: the byte encoding of the engine's control messages (request lists to the coordinator,
// response lists back). Little-endian fixed-width integers, length-prefixed strings and
// vectors. The Reader checks every length against the bytes left and against sane bounds, so
// a corrupted or truncated message becomes a kInternal Status naming what was being read,
// never a crash or a huge allocation.
//
// Only the engine's background thread encodes and decodes; a Writer or Reader is used by one
// thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "hora/status.h"

namespace hora {
namespace engine {

class Writer {
 public:
  void u8(uint8_t v) { bytes_.push_back(v); }
  void u32(uint32_t v);
  void i64(int64_t v);
  void f64(double v);
  void str(const std::string& s);
  void i64s(const std::vector<int64_t>& v);
  void i64s(const int64_t* v, size_t count);

  const std::vector<uint8_t>& bytes() const { return bytes_; }
  std::vector<uint8_t> take() { return std::move(bytes_); }

 private:
  // `v`'s sizeof(U) bytes, least significant first.
  template <typename U>
  void put_le(U v);

  std::vector<uint8_t> bytes_;
};

class Reader {
 public:
  Reader(const uint8_t* data, size_t size) : data_(data), size_(size) {}

  // Each fails (and keeps failing) once the message is exhausted or a bound is exceeded;
  // `what` names the field for the error message.
  Status u8(uint8_t* v, const char* what);
  Status u32(uint32_t* v, const char* what);
  Status i64(int64_t* v, const char* what);
  Status f64(double* v, const char* what);
  Status str(std::string* s, const char* what);
  Status i64s(std::vector<int64_t>* v, const char* what);

  bool done() const { return pos_ == size_; }
  size_t position() const { return pos_; }

 private:
  Status need(size_t n, const char* what);
  // sizeof(U) bytes, least significant first, into *v (unsigned U).
  template <typename U>
  Status get_le(U* v, const char* what);

  const uint8_t* data_;
  size_t size_;
  size_t pos_ = 0;
};

// Bounds on decoded fields: a name longer than this, or a vector with more entries, is
// a corrupted message.
inline constexpr size_t kMaxWireString = 64 * 1024;
inline constexpr size_t kMaxWireVector = 1 << 20;

}  // namespace engine
}  // namespace hora
