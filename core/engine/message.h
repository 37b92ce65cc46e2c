// The engine's control vocabulary: a Request (what one rank asks for under one name) and a
// Response (what every rank agreed to run, or the error every rank reports for that name).
//
// A Request travels from a rank to the coordinator when it is not in the response cache; a
// Response travels from the coordinator to every rank and is kept in the response cache.
// Both encode through core/engine/wire.h; decoding validates every enum and count.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "core/engine/wire.h"
#include "hora/compression.h"
#include "hora/data_type.h"
#include "hora/device.h"
#include "hora/reduce_op.h"
#include "hora/small_shape.h"
#include "hora/status.h"

namespace hora {
namespace engine {

enum class CollectiveType : uint8_t {
  kAllreduce = 0,
  kAllgather,
  kBroadcast,
  kAlltoall,
  kReducescatter,
  kBarrier,
  kJoin,
};
inline constexpr int kNumCollectiveTypes = 7;

// "allreduce", "allgather", ...
const char* collective_name(CollectiveType type);

// Whether a rank that has joined can take part in `type` with `op` by contributing zeros: only
// an allreduce with sum, average or adasum (where a zero vector leaves the other unchanged)
// can (the controller and the coordinator both ask).
inline bool joined_zeros_ok(CollectiveType type, ReduceOp op) {
  return type == CollectiveType::kAllreduce &&
         (op == ReduceOp::kSum || op == ReduceOp::kAverage || op == ReduceOp::kAdasum);
}

struct Entry;  // tensor_queue.h

struct Request {
  std::string name;
  CollectiveType type = CollectiveType::kAllreduce;
  int32_t rank = 0;  // the requesting rank
  DataType dtype = DataType::kFloat32;
  SmallShape shape;  // inline: a request is copied without allocating
  Device device;
  ReduceOp op = ReduceOp::kSum;
  int32_t root = 0;  // broadcast
  double prescale = 1.0;
  double postscale = 1.0;
  Compression compression = Compression::kNone;  // allreduce of float32 only
  std::vector<int64_t> splits;  // alltoall: rows to each rank (resolved, never empty)
  // Grouped allreduce: members share group_key (the first member's name) and group_size.
  std::string group_key;
  int32_t group_size = 0;
  // kJoin: how long this rank's join had waited in its queue when the request was sent, in
  // microseconds. A join enqueued while the engine was inside a round goes out a round late;
  // the coordinator subtracts this wait so that "the last rank to join" follows the calls, not
  // the rounds (Coordinator::ingest).
  int64_t waited_us = 0;
  // This rank's queue entry of the request (set by TensorQueue::enqueue; never encoded, so
  // null in anything decoded). Valid until the executor completes the name.
  Entry* local_entry = nullptr;
  // The name's id in this rank's queue (NameTable, set with local_entry; never encoded, so -1
  // in anything decoded): the response cache finds the name by it without hashing.
  int32_t name_id = -1;
  // The content's version in its queue slot (set with name_id; never encoded, so 0 in anything
  // decoded): it changes whenever the slot's request differs from the one before it, so a
  // request whose version was matched against a cached response once matches it again while
  // that response stays (ResponseCache::lookup), without comparing its fields. 0: unknown.
  uint32_t version = 0;
};

// True when a and b ask for the same collective in every field that must agree across ranks
// (everything but rank; splits too are per rank).
bool same_signature(const Request& a, const Request& b);

// Checks that every rank's request for one name agrees; on a mismatch returns the message
// for every rank, naming the tensor, the field, and the two ranks with their values:
// "tensor 'fc1.weight': allreduce shape [4,5] on rank 0 but [4,6] on rank 1".
// `requests` holds one request per participating rank (joined ranks excluded), in rank order.
std::string validate_requests(const std::vector<const Request*>& requests, int size);

struct Response {
  std::string name;
  CollectiveType type = CollectiveType::kAllreduce;
  // Non-empty: every rank completes this name with this error (error_code a StatusCode).
  std::string error;
  int32_t error_code = 0;
  DataType dtype = DataType::kFloat32;
  SmallShape shape;  // rank 0's request (allgather/alltoall: rows vary per rank)
  Device device;
  ReduceOp op = ReduceOp::kSum;
  int32_t root = 0;
  double prescale = 1.0;
  double postscale = 1.0;
  Compression compression = Compression::kNone;
  std::vector<int64_t> first_dims;  // allgather: rows of every rank
  std::vector<int64_t> splits;      // alltoall: size x size, row r = rank r's splits
  int32_t last_joined = -1;         // join: the last rank to join
  std::string group_key;
  int32_t group_size = 0;
  // This rank's queue entry, when the round knows it (a response agreed on the cache path
  // carries its waiting request's); never encoded, so null from the coordinator. The executor
  // then finds the entry without a lookup by name.
  Entry* local_entry = nullptr;

  bool is_error() const { return !error.empty(); }
  // Elements of one rank's contribution (allreduce, broadcast, reducescatter input).
  int64_t element_count() const;
};

struct ResponseList {
  std::vector<Response> responses;
  bool shutdown = false;  // some rank shut down: every rank stops after this list
  std::string fatal;      // non-empty: every rank stops and fails everything with this
  // Set by the round from its reduction (not encoded): who asked to shut down ("rank 2",
  // "3 ranks"), and whether every rank asked to park its engine after this list.
  std::string shutdown_by;
  bool pause = false;
  // Set by the round (not encoded). A list whose every response came from the response cache
  // gets an id (non-zero). A later list agreeing the same cache positions in the same order,
  // none of them changed since, is that list again (a training loop's next step): it has the
  // same id and `repeated` set, and its responses are the earlier list's, field for field but
  // local_entry. Planning it again would give the same buckets (FusionPlanner).
  uint64_t cached_id = 0;
  bool repeated = false;
};
// How many lists with an id the controller keeps for their repeats, and the fusion planner
// the plans of (both replace the least recently kept).
inline constexpr int kKeptLists = 4;

void encode_request(const Request& r, Writer& w);
Status decode_request(Reader& r, Request* out);
void encode_response(const Response& r, Writer& w);
Status decode_response(Reader& r, Response* out);

std::vector<uint8_t> encode_requests(const std::vector<Request>& requests);
StatusOr<std::vector<Request>> decode_requests(const std::vector<uint8_t>& bytes);
std::vector<uint8_t> encode_response_list(const ResponseList& list);
StatusOr<ResponseList> decode_response_list(const std::vector<uint8_t>& bytes);

}  // namespace engine
}  // namespace hora
