#include "core/engine/wire.h"

#include <cstring>

namespace hora {
namespace engine {

template <typename U>
void Writer::put_le(U v) {
  for (size_t i = 0; i < sizeof(U); ++i) bytes_.push_back(static_cast<uint8_t>(v >> (8 * i)));
}

void Writer::u32(uint32_t v) { put_le(v); }

void Writer::i64(int64_t v) { put_le(static_cast<uint64_t>(v)); }

void Writer::f64(double v) {
  int64_t bits;
  std::memcpy(&bits, &v, sizeof(bits));
  i64(bits);
}

void Writer::str(const std::string& s) {
  u32(static_cast<uint32_t>(s.size()));
  bytes_.insert(bytes_.end(), s.begin(), s.end());
}

void Writer::i64s(const std::vector<int64_t>& v) { i64s(v.data(), v.size()); }

void Writer::i64s(const int64_t* v, size_t count) {
  u32(static_cast<uint32_t>(count));
  for (size_t i = 0; i < count; ++i) i64(v[i]);
}

Status Reader::need(size_t n, const char* what) {
  if (n > size_ - pos_)
    return Status::internal(std::string("corrupted control message: ") + what + " needs " +
                            std::to_string(n) + " bytes at offset " + std::to_string(pos_) +
                            " but the message has " + std::to_string(size_) + " bytes");
  return Status::OK();
}

Status Reader::u8(uint8_t* v, const char* what) {
  HORA_RETURN_IF_ERROR(need(1, what));
  *v = data_[pos_++];
  return Status::OK();
}

template <typename U>
Status Reader::get_le(U* v, const char* what) {
  HORA_RETURN_IF_ERROR(need(sizeof(U), what));
  U x = 0;
  for (size_t i = 0; i < sizeof(U); ++i) x |= static_cast<U>(data_[pos_ + i]) << (8 * i);
  pos_ += sizeof(U);
  *v = x;
  return Status::OK();
}

Status Reader::u32(uint32_t* v, const char* what) { return get_le(v, what); }

Status Reader::i64(int64_t* v, const char* what) {
  uint64_t x = 0;
  HORA_RETURN_IF_ERROR(get_le(&x, what));
  *v = static_cast<int64_t>(x);
  return Status::OK();
}

Status Reader::f64(double* v, const char* what) {
  int64_t bits;
  HORA_RETURN_IF_ERROR(i64(&bits, what));
  std::memcpy(v, &bits, sizeof(bits));
  return Status::OK();
}

Status Reader::str(std::string* s, const char* what) {
  uint32_t n;
  HORA_RETURN_IF_ERROR(u32(&n, what));
  if (n > kMaxWireString)
    return Status::internal(std::string("corrupted control message: ") + what + " of " +
                            std::to_string(n) + " bytes exceeds " + std::to_string(kMaxWireString));
  HORA_RETURN_IF_ERROR(need(n, what));
  s->assign(reinterpret_cast<const char*>(data_ + pos_), n);
  pos_ += n;
  return Status::OK();
}

Status Reader::i64s(std::vector<int64_t>* v, const char* what) {
  uint32_t n;
  HORA_RETURN_IF_ERROR(u32(&n, what));
  if (n > kMaxWireVector)
    return Status::internal(std::string("corrupted control message: ") + what + " of " +
                            std::to_string(n) + " entries exceeds " +
                            std::to_string(kMaxWireVector));
  HORA_RETURN_IF_ERROR(need(size_t{n} * 8, what));
  v->resize(n);
  for (uint32_t i = 0; i < n; ++i) HORA_RETURN_IF_ERROR(i64(&(*v)[i], what));
  return Status::OK();
}

}  // namespace engine
}  // namespace hora
