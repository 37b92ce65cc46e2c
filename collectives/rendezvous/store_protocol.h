// The wire protocol of TcpStoreServer / TcpStoreClient.
//
// Framing: every message is one frame, a u32 little-endian payload length followed by the
// payload. A length above the receiver's max_frame_bytes is an error (the connection closes).
//
// Connection, in order:
//   1. server -> client: frame whose payload is a 32-byte random nonce (store_auth.h).
//   2. client -> server: frame whose payload is the 32-byte proof HMAC(secret, nonce || tag).
//   3. server -> client: frame whose payload is the single byte kAuthAccepted; on a wrong or
//      malformed proof the server closes the connection instead, so nothing is readable
//      before step 3.
//   4. client -> server requests, each answered by exactly one response, in order. A
//      blocking request (get, wait) is answered when its keys exist or its timeout passes.
//
// Payload encoding (all integers little endian):
//   string / bytes: u32 length + bytes; key list: u32 count + strings.
//   Request:  u8 type, then  set: key, value | get: key, i64 timeout_ms | add: key, i64 delta
//             | check: keys | wait: keys, i64 timeout_ms | remove: key.
//   Response: u8 code (a StatusCode), i64 number, bytes value, string message.
//             get -> value; add -> number (new value); check/remove -> number (0/1);
//             errors -> code != kOk and message (e.g. the keys a wait timed out on).
//
// Decoding checks every length against the bytes present, so malformed input yields a
// Status, never a crash or an over-read. All functions are pure; FrameParser is a value type
// used by one thread at a time.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/rendezvous/store.h"
#include "hora/status.h"

namespace hora {
namespace collectives {

constexpr size_t kFrameHeaderBytes = 4;
constexpr uint8_t kAuthAccepted = 1;

enum class RequestType : uint8_t {
  kSet = 1,
  kGet = 2,
  kAdd = 3,
  kCheck = 4,
  kWait = 5,
  kRemove = 6,
};

// Returns "set", "get", ...; "unknown" for other values.
const char* request_type_name(RequestType type);

struct StoreRequest {
  RequestType type = RequestType::kSet;
  std::vector<std::string> keys;  // exactly one for set/get/add/remove
  Bytes value;                    // set
  int64_t delta = 0;              // add
  int64_t timeout_ms = 0;         // get, wait
};

struct StoreResponse {
  StatusCode code = StatusCode::kOk;
  int64_t number = 0;
  Bytes value;
  std::string message;
};

// Appends one frame (header + payload) to `out`.
void append_frame(const uint8_t* payload, size_t payload_bytes, Bytes* out);
inline void append_frame(const Bytes& payload, Bytes* out) {
  append_frame(payload.data(), payload.size(), out);
}

// FrameParser: incremental frame splitter. Feed bytes as they arrive; complete frames come
// out in order. A header announcing more than max_frame_bytes is an error, after which the
// parser stays failed (the connection must close).
class FrameParser {
 public:
  explicit FrameParser(size_t max_frame_bytes) : max_frame_bytes_(max_frame_bytes) {}

  // Consumes `bytes` bytes; appends each completed frame's payload to `frames`.
  // kInvalidArgument (naming the announced length and the limit) on an oversize frame.
  Status feed(const uint8_t* data, size_t bytes, std::vector<Bytes>* frames);
  // Bytes received that do not yet form a whole frame (non-zero: a peer left mid-frame).
  size_t buffered_bytes() const { return buffer_.size() - offset_; }
  bool has_failed() const { return !status_.ok(); }

 private:
  size_t max_frame_bytes_;
  Bytes buffer_;  // unconsumed input starts at offset_
  size_t offset_ = 0;
  Status status_;
};

Bytes encode_request(const StoreRequest& request);
// kInvalidArgument on a truncated, oversized or unknown request, or trailing bytes.
StatusOr<StoreRequest> decode_request(const uint8_t* payload, size_t bytes);
inline StatusOr<StoreRequest> decode_request(const Bytes& payload) {
  return decode_request(payload.data(), payload.size());
}

Bytes encode_response(const StoreResponse& response);
StatusOr<StoreResponse> decode_response(const uint8_t* payload, size_t bytes);
inline StatusOr<StoreResponse> decode_response(const Bytes& payload) {
  return decode_response(payload.data(), payload.size());
}

// "[a, b]": for error messages naming keys.
std::string format_keys(const std::vector<std::string>& keys);

}  // namespace collectives
}  // namespace hora
