#include "collectives/rendezvous/store_protocol.h"

#include <cstring>

namespace hora {
namespace collectives {
namespace {

void put_u32(uint32_t v, Bytes* out) {
  for (int i = 0; i < 4; ++i) out->push_back(static_cast<uint8_t>(v >> (8 * i)));
}
void put_i64(int64_t v, Bytes* out) {
  const uint64_t u = static_cast<uint64_t>(v);
  for (int i = 0; i < 8; ++i) out->push_back(static_cast<uint8_t>(u >> (8 * i)));
}
void put_bytes(const uint8_t* data, size_t bytes, Bytes* out) {
  put_u32(static_cast<uint32_t>(bytes), out);
  out->insert(out->end(), data, data + bytes);
}
void put_string(const std::string& s, Bytes* out) {
  put_bytes(reinterpret_cast<const uint8_t*>(s.data()), s.size(), out);
}

uint32_t load_u32(const uint8_t* p) {
  return static_cast<uint32_t>(p[0]) | (static_cast<uint32_t>(p[1]) << 8) |
         (static_cast<uint32_t>(p[2]) << 16) | (static_cast<uint32_t>(p[3]) << 24);
}

// Reader: a bounds-checked cursor over a payload. Every read fails (and keeps failing) once
// the payload is exhausted, so decoders never read past the end.
class Reader {
 public:
  Reader(const uint8_t* data, size_t bytes) : data_(data), left_(bytes) {}

  bool u8(uint8_t* v) {
    if (left_ < 1) return fail();
    *v = data_[0];
    advance(1);
    return true;
  }
  bool u32(uint32_t* v) {
    if (left_ < 4) return fail();
    *v = load_u32(data_);
    advance(4);
    return true;
  }
  bool i64(int64_t* v) {
    if (left_ < 8) return fail();
    uint64_t u = 0;
    for (int i = 0; i < 8; ++i) u |= static_cast<uint64_t>(data_[i]) << (8 * i);
    *v = static_cast<int64_t>(u);
    advance(8);
    return true;
  }
  bool bytes(Bytes* v) {
    uint32_t n = 0;
    if (!u32(&n) || n > left_) return fail();
    v->assign(data_, data_ + n);
    advance(n);
    return true;
  }
  bool string(std::string* v) {
    uint32_t n = 0;
    if (!u32(&n) || n > left_) return fail();
    v->assign(reinterpret_cast<const char*>(data_), n);
    advance(n);
    return true;
  }
  bool keys(std::vector<std::string>* v) {
    uint32_t count = 0;
    // Each key takes at least its 4-byte length, so a count above left_/4 is a lie; checking
    // it first keeps a hostile count from reserving gigabytes.
    if (!u32(&count) || count > left_ / 4) return fail();
    v->resize(count);
    for (auto& key : *v) {
      if (!string(&key)) return false;
    }
    return true;
  }
  bool at_end() const { return left_ == 0 && ok_; }
  bool ok() const { return ok_; }

 private:
  bool fail() {
    ok_ = false;
    left_ = 0;
    return false;
  }
  void advance(size_t n) {
    data_ += n;
    left_ -= n;
  }
  const uint8_t* data_;
  size_t left_;
  bool ok_ = true;
};

}  // namespace

const char* request_type_name(RequestType type) {
  switch (type) {
    case RequestType::kSet: return "set";
    case RequestType::kGet: return "get";
    case RequestType::kAdd: return "add";
    case RequestType::kCheck: return "check";
    case RequestType::kWait: return "wait";
    case RequestType::kRemove: return "remove";
  }
  return "unknown";
}

void append_frame(const uint8_t* payload, size_t payload_bytes, Bytes* out) {
  put_u32(static_cast<uint32_t>(payload_bytes), out);
  out->insert(out->end(), payload, payload + payload_bytes);
}

Status FrameParser::feed(const uint8_t* data, size_t bytes, std::vector<Bytes>* frames) {
  if (!status_.ok()) return status_;
  // Compact before growing so the buffer holds at most one partial frame plus new input.
  if (offset_ > 0 && offset_ == buffer_.size()) {
    buffer_.clear();
    offset_ = 0;
  } else if (offset_ > (size_t{64} << 10) && offset_ * 2 > buffer_.size()) {
    buffer_.erase(buffer_.begin(), buffer_.begin() + static_cast<std::ptrdiff_t>(offset_));
    offset_ = 0;
  }
  buffer_.insert(buffer_.end(), data, data + bytes);
  while (buffer_.size() - offset_ >= kFrameHeaderBytes) {
    const uint32_t length = load_u32(buffer_.data() + offset_);
    if (length > max_frame_bytes_) {
      status_ = Status::invalid_argument("store frame of " + std::to_string(length) +
                                         " bytes exceeds the limit of " +
                                         std::to_string(max_frame_bytes_) + " bytes");
      buffer_.clear();
      offset_ = 0;
      return status_;
    }
    if (buffer_.size() - offset_ - kFrameHeaderBytes < length) break;
    const uint8_t* begin = buffer_.data() + offset_ + kFrameHeaderBytes;
    frames->emplace_back(begin, begin + length);
    offset_ += kFrameHeaderBytes + length;
  }
  return Status::OK();
}

Bytes encode_request(const StoreRequest& request) {
  Bytes out;
  out.push_back(static_cast<uint8_t>(request.type));
  static const std::string kEmpty;
  const std::string& key = request.keys.empty() ? kEmpty : request.keys.front();
  switch (request.type) {
    case RequestType::kSet:
      put_string(key, &out);
      put_bytes(request.value.data(), request.value.size(), &out);
      break;
    case RequestType::kGet:
      put_string(key, &out);
      put_i64(request.timeout_ms, &out);
      break;
    case RequestType::kAdd:
      put_string(key, &out);
      put_i64(request.delta, &out);
      break;
    case RequestType::kCheck:
    case RequestType::kWait:
      put_u32(static_cast<uint32_t>(request.keys.size()), &out);
      for (const auto& k : request.keys) put_string(k, &out);
      if (request.type == RequestType::kWait) put_i64(request.timeout_ms, &out);
      break;
    case RequestType::kRemove: put_string(key, &out); break;
  }
  return out;
}

StatusOr<StoreRequest> decode_request(const uint8_t* payload, size_t bytes) {
  Reader in(payload, bytes);
  uint8_t type = 0;
  if (!in.u8(&type)) return Status::invalid_argument("empty store request");
  StoreRequest request;
  request.type = static_cast<RequestType>(type);
  bool ok = false;
  switch (request.type) {
    case RequestType::kSet:
      request.keys.resize(1);
      ok = in.string(&request.keys[0]) && in.bytes(&request.value);
      break;
    case RequestType::kGet:
      request.keys.resize(1);
      ok = in.string(&request.keys[0]) && in.i64(&request.timeout_ms);
      break;
    case RequestType::kAdd:
      request.keys.resize(1);
      ok = in.string(&request.keys[0]) && in.i64(&request.delta);
      break;
    case RequestType::kCheck: ok = in.keys(&request.keys); break;
    case RequestType::kWait: ok = in.keys(&request.keys) && in.i64(&request.timeout_ms); break;
    case RequestType::kRemove:
      request.keys.resize(1);
      ok = in.string(&request.keys[0]);
      break;
    default: return Status::invalid_argument("unknown store request type " + std::to_string(type));
  }
  if (!ok) {
    return Status::invalid_argument(std::string("truncated store ") +
                                    request_type_name(request.type) + " request (" +
                                    std::to_string(bytes) + " bytes)");
  }
  if (!in.at_end()) {
    return Status::invalid_argument(std::string("trailing bytes after store ") +
                                    request_type_name(request.type) + " request");
  }
  return request;
}

Bytes encode_response(const StoreResponse& response) {
  Bytes out;
  out.push_back(static_cast<uint8_t>(response.code));
  put_i64(response.number, &out);
  put_bytes(response.value.data(), response.value.size(), &out);
  put_string(response.message, &out);
  return out;
}

StatusOr<StoreResponse> decode_response(const uint8_t* payload, size_t bytes) {
  Reader in(payload, bytes);
  uint8_t code = 0;
  StoreResponse response;
  if (!in.u8(&code) || !in.i64(&response.number) || !in.bytes(&response.value) ||
      !in.string(&response.message) || !in.at_end()) {
    return Status::invalid_argument("malformed store response (" + std::to_string(bytes) +
                                    " bytes)");
  }
  if (code > static_cast<uint8_t>(StatusCode::kInternal)) {
    return Status::invalid_argument("store response with unknown code " + std::to_string(code));
  }
  response.code = static_cast<StatusCode>(code);
  return response;
}

std::string format_keys(const std::vector<std::string>& keys) {
  std::string out = "[";
  for (size_t i = 0; i < keys.size(); ++i) {
    if (i > 0) out += ", ";
    out += "\"" + keys[i] + "\"";
  }
  return out + "]";
}

}  // namespace collectives
}  // namespace hora
