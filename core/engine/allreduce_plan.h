// AllreducePlan: what an allreduce bucket settles before its path diverges, the same on the
// host (executor.cc) and on the device (device_executor.cc): the type the collective moves and
// reduces (the half type of a compressed bucket: compressed_copy.h), and the op and postscale it
// runs with (kAverage runs as kSum with postscale x 1/size). Beside it, what else both paths
// share: their algorithms' options and the timeline records they make of a bucket. Values and pure
// functions; record_bucket writes to the timeline (background thread, as its callers).
#pragma once

#include <cstddef>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/scratch_pool.h"
#include "collectives/topology.h"
#include "core/base/deadline.h"
#include "core/engine/fusion_planner.h"
#include "core/engine/message.h"
#include "core/engine/tensor_queue.h"
#include "core/engine/timeline.h"
#include "hora/compression.h"
#include "hora/data_type.h"
#include "hora/reduce_op.h"

namespace hora {
namespace engine {

struct AllreducePlan {
  Compression compression = Compression::kNone;
  bool compressed = false;              // compression != kNone
  DataType dtype = DataType::kFloat32;  // what the collective moves and reduces
  size_t elem = 0;                      // data_type_bytes(dtype)
  ReduceOp op = ReduceOp::kSum;         // never kAverage
  double postscale = 1.0;               // the bucket's, times 1/size for kAverage
};

// The plan of the bucket whose first response is `head`, over `size` ranks. Inline: it runs
// for every bucket.
inline AllreducePlan plan_allreduce(const Response& head, int size) {
  AllreducePlan plan;
  plan.compression = head.compression;
  plan.compressed = head.compression != Compression::kNone;
  plan.dtype = wire_data_type(head.dtype, head.compression);
  plan.elem = data_type_bytes(plan.dtype);
  plan.op = head.op;
  plan.postscale = head.postscale;
  if (plan.op == ReduceOp::kAverage) {
    plan.op = ReduceOp::kSum;
    plan.postscale *= 1.0 / size;
  }
  return plan;
}

// The options both executors run hora's algorithms with: a deadline `timeout_s` from now, their
// scratch pool and the job's topology (may be null).
inline collectives::AlgorithmOptions executor_algorithm_options(
    double timeout_s, collectives::ScratchPool* scratch, const collectives::Topology* topology) {
  collectives::AlgorithmOptions ao;
  ao.deadline = Deadline::after_seconds(timeout_s);
  ao.scratch = scratch;
  ao.topology = topology;
  return ao;
}

// record_bucket's events, written to an enabled `timeline`.
void record_bucket_events(Timeline& timeline, const std::vector<Response>& responses,
                          const Bucket& bucket, const char* phase, Clock::time_point start,
                          const Timeline::Args& args);

// A timeline phase from `start` to now for every tensor of `bucket`; nothing when `timeline`
// is null or disabled (checked inline: every bucket passes here, the timeline mostly off).
inline void record_bucket(Timeline* timeline, const std::vector<Response>& responses,
                          const Bucket& bucket, const char* phase, Clock::time_point start,
                          const Timeline::Args& args = {}) {
  if (timeline != nullptr && timeline->enabled())
    record_bucket_events(*timeline, responses, bucket, phase, start, args);
}

// The ALLREDUCE phase's arguments: {`key`, `value`} (the algorithm, or the device path), then
// the backend, the bucket's bytes and its tensor count.
Timeline::Args allreduce_args(const char* key, const char* value, const char* backend, size_t bytes,
                              size_t tensors);

}  // namespace engine
}  // namespace hora
