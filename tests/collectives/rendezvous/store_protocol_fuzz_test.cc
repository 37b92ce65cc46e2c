// Replays the fuzz entry over crafted malformed inputs and seeded random bytes and bit flips
// of valid frames, so builds without libFuzzer exercise it too.
#include <gtest/gtest.h>

#include <random>

#include "collectives/rendezvous/store_protocol.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace hora {
namespace collectives {
namespace {

Bytes valid_frame() {
  StoreRequest r;
  r.type = RequestType::kWait;
  r.keys = {"alpha", "beta"};
  r.timeout_ms = 42;
  Bytes out;
  append_frame(encode_request(r), &out);
  return out;
}

TEST(StoreProtocolFuzzTest, CraftedInputs) {
  const std::vector<Bytes> inputs = {
      {},
      {0, 0, 0, 0},
      {0xff, 0xff, 0xff, 0xff, 1},
      {5, 0, 0, 0, 1, 0xff, 0xff, 0xff, 0xff},  // set with a key length far past the end
      {2, 0, 0, 0, 99, 0},                      // unknown request type
      valid_frame(),
  };
  for (const Bytes& in : inputs) EXPECT_EQ(LLVMFuzzerTestOneInput(in.data(), in.size()), 0);
}

TEST(StoreProtocolFuzzTest, RandomBytesAndBitFlips) {
  std::mt19937 rng(12345);
  for (int i = 0; i < 20000; ++i) {
    Bytes in(rng() % 64);
    for (auto& x : in) x = static_cast<uint8_t>(rng());
    LLVMFuzzerTestOneInput(in.data(), in.size());
  }
  const Bytes frame = valid_frame();
  for (size_t bit = 0; bit < frame.size() * 8; ++bit) {
    Bytes in = frame;
    in[bit / 8] ^= static_cast<uint8_t>(1u << (bit % 8));
    LLVMFuzzerTestOneInput(in.data(), in.size());
  }
  SUCCEED();
}

TEST(StoreProtocolFuzzTest, TruncatedRequestIsAnError) {
  const Bytes frame = valid_frame();
  const Bytes payload(frame.begin() + kFrameHeaderBytes, frame.end());
  for (size_t n = 0; n < payload.size(); ++n)
    EXPECT_FALSE(decode_request(payload.data(), n).ok()) << n;
  EXPECT_TRUE(decode_request(payload).ok());
  Bytes trailing = payload;
  trailing.push_back(0);
  EXPECT_FALSE(decode_request(trailing).ok());
}

}  // namespace
}  // namespace collectives
}  // namespace hora
