// Fuzz entry for the store's wire protocol: frame splitting and request/response decoding
// of arbitrary bytes must never crash, over-read or accept trailing garbage silently.
// Built two ways: with libFuzzer (run_fuzz.sh, clang) and into store_protocol_fuzz_test.
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "collectives/rendezvous/store_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace hora::collectives;
  // As a stream split at an arbitrary point, the way recv() delivers it.
  FrameParser parser(1 << 16);
  std::vector<Bytes> frames;
  const size_t cut = size ? data[0] % (size + 1) : 0;
  hora::Status s = parser.feed(data, cut, &frames);
  if (s.ok()) s = parser.feed(data + cut, size - cut, &frames);
  for (const Bytes& f : frames) {
    auto request = decode_request(f);
    if (request.ok()) {
      // A request that decodes must re-encode to the same bytes.
      if (encode_request(request.value()) != f) std::abort();
    }
    (void)decode_response(f);
  }
  // The raw bytes as one payload.
  (void)decode_request(data, size);
  (void)decode_response(data, size);
  return 0;
}
