// Compression as a request option, without communication: the wire field (and its refusal
// when corrupted), the mismatch message, the response cache, the fusion planner (equal
// compression only, wire bytes), the coordinator, and the executor's compressed copies
// against a scalar reference.
#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/compressed_copy.h"
#include "core/engine/coordinator.h"
#include "core/engine/fusion_planner.h"
#include "core/engine/message.h"
#include "core/engine/response_cache.h"
#include "kernels/kernels.h"

namespace hora {
namespace engine {
namespace {

Request request(const std::string& name, int rank, Compression c) {
  Request r;
  r.name = name;
  r.type = CollectiveType::kAllreduce;
  r.rank = rank;
  r.shape = {4, 5};
  r.compression = c;
  return r;
}

Response response(const std::string& name, int64_t elements, Compression c) {
  Response r;
  r.name = name;
  r.type = CollectiveType::kAllreduce;
  r.shape = {elements};
  r.compression = c;
  return r;
}

TEST(CompressionWire, RequestAndResponseFieldRoundTrips) {
  std::vector<Request> in = {request("a", 0, Compression::kFloat16),
                             request("b", 1, Compression::kBFloat16),
                             request("c", 2, Compression::kNone)};
  auto out = decode_requests(encode_requests(in));
  ASSERT_TRUE(out.ok()) << out.status().to_string();
  for (size_t i = 0; i < in.size(); ++i) {
    EXPECT_EQ((*out)[i].compression, in[i].compression) << i;
    EXPECT_TRUE(same_signature(in[i], (*out)[i])) << i;
  }
  ResponseList list;
  list.responses = {response("x", 3, Compression::kBFloat16)};
  auto back = decode_response_list(encode_response_list(list));
  ASSERT_TRUE(back.ok()) << back.status().to_string();
  EXPECT_EQ(back->responses[0].compression, Compression::kBFloat16);
}

TEST(CompressionWire, CorruptedValueIsAnErrorNamingIt) {
  std::vector<Request> in = {request("a", 0, Compression::kFloat16)};
  std::vector<uint8_t> bytes = encode_requests(in);
  // Find the byte that differs between the fp16 and bf16 encodings: the compression field.
  in[0].compression = Compression::kBFloat16;
  const std::vector<uint8_t> other = encode_requests(in);
  ASSERT_EQ(bytes.size(), other.size());
  size_t at = bytes.size();
  for (size_t i = 0; i < bytes.size(); ++i)
    if (bytes[i] != other[i]) at = i;
  ASSERT_LT(at, bytes.size());
  bytes[at] = kNumCompressions;
  auto r = decode_requests(bytes);
  ASSERT_FALSE(r.ok());
  EXPECT_NE(r.status().message().find("compression " + std::to_string(kNumCompressions)),
            std::string::npos)
      << r.status().message();
}

TEST(CompressionValidate, MismatchNamesTensorRanksAndValues) {
  Request a = request("fc1.weight", 0, Compression::kNone);
  Request b = request("fc1.weight", 1, Compression::kFloat16);
  EXPECT_FALSE(same_signature(a, b));
  EXPECT_EQ(validate_requests({&a, &b}, 2),
            "tensor 'fc1.weight': allreduce compression none on rank 0 but fp16 on rank 1");
}

TEST(CompressionCache, CachedResponseMatchesOnlyTheSameCompression) {
  Response r = response("a", 20, Compression::kFloat16);
  r.shape = {4, 5};
  EXPECT_TRUE(ResponseCache::matches(request("a", 1, Compression::kFloat16), r));
  EXPECT_FALSE(ResponseCache::matches(request("a", 1, Compression::kNone), r));
  EXPECT_FALSE(ResponseCache::matches(request("a", 1, Compression::kBFloat16), r));
}

TEST(CompressionPlanner, FusesEqualCompressionOnlyAndCountsWireBytes) {
  std::vector<Response> list = {
      response("a", 100, Compression::kFloat16), response("b", 100, Compression::kNone),
      response("c", 100, Compression::kFloat16), response("d", 100, Compression::kBFloat16)};
  std::vector<Bucket> b = plan_buckets(list, 1 << 20);
  ASSERT_EQ(b.size(), 3u);
  EXPECT_EQ(b[0].members, (std::vector<int>{0, 2}));
  EXPECT_EQ(b[0].bytes, 400);  // two tensors of 100 float16
  EXPECT_EQ(b[1].members, (std::vector<int>{1}));
  EXPECT_EQ(b[1].bytes, 400);  // float32
  EXPECT_EQ(b[2].members, (std::vector<int>{3}));
  EXPECT_EQ(response_bytes(list[3]), 200);
  // 100 float16 = 200 bytes: two fit a 400-byte threshold, as float32 they would not.
  EXPECT_EQ(plan_buckets({list[0], list[2]}, 400).size(), 1u);
}

TEST(CompressionCoordinator, ResponseCarriesTheAgreedCompression) {
  const auto now = std::chrono::steady_clock::now();
  Coordinator c(2);
  c.ingest(0, {request("x", 0, Compression::kBFloat16)}, now);
  c.ingest(1, {request("x", 1, Compression::kBFloat16)}, now);
  auto out = c.collect();
  ASSERT_EQ(out.size(), 1u);
  EXPECT_FALSE(out[0].is_error()) << out[0].error;
  EXPECT_EQ(out[0].compression, Compression::kBFloat16);
}

// Inputs that cover rounding, both signs, large and small magnitudes, and more than one chunk.
std::vector<float> inputs(size_t n) {
  std::vector<float> v(n);
  for (size_t i = 0; i < n; ++i)
    v[i] = static_cast<float>((i % 2 ? -1.0 : 1.0) *
                              std::ldexp(1.0 + (i % 997) / 997.0, static_cast<int>(i % 40) - 20));
  return v;
}

TEST(CompressionCopy, PackScalesInFloat32ThenRoundsOnce) {
  const size_t n = 10007;  // several chunks and a tail
  const std::vector<float> x = inputs(n);
  for (Compression c : {Compression::kFloat16, Compression::kBFloat16}) {
    for (double prescale : {1.0, 0.25, 1.0 / 3.0}) {
      std::vector<uint16_t> got(n);
      pack_compressed(got.data(), x.data(), n, c, prescale);
      for (size_t i = 0; i < n; ++i) {
        const float scaled = x[i] * static_cast<float>(prescale);
        const uint16_t want =
            c == Compression::kFloat16 ? kernels::f32_to_f16(scaled) : kernels::f32_to_bf16(scaled);
        ASSERT_EQ(got[i], want) << compression_name(c) << " prescale " << prescale << " at " << i;
      }
    }
  }
}

TEST(CompressionCopy, UnpackWidensThenScalesInFloat32) {
  const size_t n = 9001;
  const std::vector<float> x = inputs(n);
  for (Compression c : {Compression::kFloat16, Compression::kBFloat16}) {
    std::vector<uint16_t> half(n);
    pack_compressed(half.data(), x.data(), n, c, 1.0);
    for (double postscale : {1.0, 0.5, 1.0 / 3.0}) {
      std::vector<float> got(n);
      unpack_compressed(got.data(), half.data(), n, c, postscale);
      for (size_t i = 0; i < n; ++i) {
        const float wide = c == Compression::kFloat16 ? kernels::f16_to_f32(half[i])
                                                      : kernels::bf16_to_f32(half[i]);
        ASSERT_EQ(got[i], wide * static_cast<float>(postscale))
            << compression_name(c) << " postscale " << postscale << " at " << i;
      }
    }
  }
  // Zero elements touch nothing.
  pack_compressed(nullptr, nullptr, 0, Compression::kFloat16, 0.5);
  unpack_compressed(nullptr, nullptr, 0, Compression::kBFloat16, 0.5);
}

}  // namespace
}  // namespace engine
}  // namespace hora
