// Executor::run_adasum: an Adasum allreduce bucket (executor.h).
#include "collectives/algorithms/algorithms.h"
#include "core/engine/executor.h"

namespace hora {
namespace engine {

Status Executor::run_adasum(const std::vector<Response>& responses, const Bucket& bucket,
                            const AllreducePlan& plan) {
  const size_t total = static_cast<size_t>(bucket.bytes);
  const Response& head = responses[bucket.members.front()];
  Entry* lone = bucket.members.size() == 1 ? entries_[bucket.members.front()] : nullptr;
  if (lone != nullptr && !plan.compressed && head.prescale == 1.0 && plan.postscale == 1.0) {
    // A lone tensor without scale factors: reduced from its input into its output, no packing.
    // (A joined rank, with no entry, packs zeros; the schedule is the same either way.)
    const auto start = std::chrono::steady_clock::now();
    Status s = collectives::adasum_allreduce(comm_, lone->in.data(), lone->out.data(),
                                             static_cast<size_t>(head.element_count()), plan.dtype,
                                             algorithm_options());
    record_bucket(&timeline_, responses, bucket, "ALLREDUCE", start,
                  allreduce_args("algorithm", "adasum", comm_.backend_name(), total, 1));
    if (!s.ok()) return Status(s.code(), "allreduce of tensor '" + head.name + "': " + s.message());
    return Status::OK();
  }
  uint8_t* fusion = fusion_buffer(total);
  const auto start = std::chrono::steady_clock::now();
  pack(fusion, responses, bucket, plan);
  record_bucket(&timeline_, responses, bucket, "MEMCPY_IN_FUSION_BUFFER", start);
  adasum_counts_.clear();
  adasum_counts_.reserve(bucket.members.size());
  for (int i : bucket.members)
    adasum_counts_.push_back(static_cast<size_t>(responses[i].element_count()));
  const auto reduce_start = std::chrono::steady_clock::now();
  Status s = collectives::adasum_allreduce(comm_, fusion, fusion, adasum_counts_, plan.dtype,
                                           algorithm_options());
  record_bucket(
      &timeline_, responses, bucket, "ALLREDUCE", reduce_start,
      allreduce_args("algorithm", "adasum", comm_.backend_name(), total, bucket.members.size()));
  if (!s.ok()) return Status(s.code(), "allreduce of tensor '" + head.name + "': " + s.message());
  const auto unpack_start = std::chrono::steady_clock::now();
  unpack(fusion, responses, bucket, plan);
  record_bucket(&timeline_, responses, bucket, "MEMCPY_OUT_FUSION_BUFFER", unpack_start);
  return Status::OK();
}

}  // namespace engine
}  // namespace hora
