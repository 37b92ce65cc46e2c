// Executor: runs the agreed responses of one round on the communicator, in plan order, and
// completes the handles.
//
// Allreduce buckets: a lone tensor without scale factors goes straight through the algorithm
// (in -> out, an average's 1/size applied in the algorithm's last pass); one with scale factors
// is reduced in place in its output (copied there first with the prescale); a fused bucket
// without compression is reduced where its tensors lie when it can (fused_in_place.h: at one
// rank, or the communicator's gather-list allreduce where the selector takes native); any
// other fused bucket is packed into the fusion buffer with the prescale applied while copying
// (kernels::scale_copy), reduced once, and unpacked with the postscale. kAverage runs as kSum with
// postscale x 1/size. A compressed bucket (float32 sent as float16/bfloat16) is always packed,
// alone too: the cast to the half type happens while packing (after the prescale), the algorithm
// reduces the half type, and the cast back while unpacking (then the postscale, in float32;
// compressed_copy.h). The algorithm comes from the AlgorithmTuner (algorithm_tuner.h): under
// kAuto it tries the candidates in turn per size class, times them, and fixes the agreed
// fastest; otherwise (HORA_AUTOTUNE=0, HORA_ALLREDUCE_ALGO) the selector's choice. A rank that has
// joined and lacks the tensor contributes zeros. Other collectives run hora's algorithms
// (allgatherv, broadcast, alltoallv, reducescatter); their outputs go where the entry's
// OutputAllocator says, else into the handle. An allocator that fails does not stop this rank's
// part: the result goes to engine-owned memory and the handle completes with the allocator's error.
// Error responses complete the handle with the error and the engine goes on.
//
// An Adasum bucket (ReduceOp::kAdasum) is always packed (prescale applied, compression cast),
// reduced by collectives::adasum_allreduce with each member's element count, so every tensor
// gets its own dot products inside the fused buffer, and unpacked with the postscale; one rank
// copies. The tuner does not time it (one algorithm).
//
// Buckets of tensors in GPU memory (Response::device cuda) go to the DeviceExecutor.
//
// A communication failure is returned: the engine then fails every pending handle with it.
// Background thread only. The fusion buffer is reused and only grows.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/scratch_pool.h"
#include "collectives/selector.h"
#include "collectives/topology.h"
#include "core/engine/algorithm_tuner.h"
#include "core/engine/allreduce_plan.h"
#include "core/engine/fusion_planner.h"
#include "core/engine/message.h"
#include "core/engine/tensor_queue.h"
#include "core/engine/timeline.h"
#include "hora/status.h"

namespace hora {
namespace engine {

class DeviceExecutor;

struct ExecutorOptions {
  double timeout_s = 300;
  int64_t fusion_threshold_bytes = int64_t{64} << 20;
  // Fused buckets reduced where their tensors lie (fused_in_place.h) when the communicator
  // can (HORA_FUSION_IN_PLACE); false: always packed into the fusion buffer.
  bool fusion_in_place = true;
  collectives::Algorithm algorithm = collectives::Algorithm::kAuto;
  // Online tuning of kAuto's choice (algorithm_tuner.h); off when `algorithm` is fixed.
  bool autotune = true;      // HORA_AUTOTUNE
  int autotune_samples = 3;  // HORA_AUTOTUNE_SAMPLES
  // Hosts and links for the selector and hierarchical allreduce; null: flat algorithms only.
  const collectives::Topology* topology = nullptr;
  // Non-null: allgathers run hierarchical_allgatherv over it.
  const collectives::Topology* allgather_topology = nullptr;
  // Runs the buckets whose tensors are on a GPU (device_executor.h); borrowed. Null: none.
  DeviceExecutor* device = nullptr;
};

// Updated before the handles of a bucket complete, so a waiter that returns sees them.
struct ExecutorStats {
  std::atomic<int64_t> buckets{0};
  std::atomic<int64_t> fused_tensors{0};
  std::atomic<int64_t> errors{0};
};

class Executor {
 public:
  Executor(collectives::Communicator& comm, const ExecutorOptions& options, TensorQueue& queue,
           Timeline& timeline);

  Status execute(const ResponseList& list);
  const ExecutorStats& stats() const { return stats_; }
  // The allreduce algorithm tuner (tests read its decisions, set its skew hook).
  AlgorithmTuner& tuner() { return tuner_; }
  // The fusion threshold of the next lists planned (the autotuner's; between rounds, on the
  // round thread).
  void set_fusion_threshold(int64_t bytes) { fusion_threshold_bytes_ = bytes; }

 private:
  Status run_allreduce(const std::vector<Response>& responses, const Bucket& bucket);
  Status run_single(const Response& r);
  // run_single's allgather, alltoall or reducescatter of `e` (single_plan.h), its output where
  // output_of() puts it (an allocator's failure left in *allocator_error).
  Status run_planned(Entry& e, const Response& r, Status* allocator_error);
  // `pick`: the tuner's pick taken (and recorded) by the caller, who times more than the
  // algorithm (a packed bucket: packing and unpacking too); null: taken and recorded here.
  Status run_algorithm(const void* in, void* out, size_t count, DataType dtype, ReduceOp op,
                       const std::vector<Response>& responses, const Bucket& bucket,
                       const TunerPick* pick = nullptr);
  // run_allreduce's paths (executor.h's file comment), each ending before complete_bucket:
  // a lone tensor with scale factors, reduced in place in its output;
  Status run_lone_scaled(Entry& lone, const std::vector<Response>& responses, const Bucket& bucket,
                         const AllreducePlan& plan);
  // a fused bucket reduced where its tensors lie by the communicator's gather-list allreduce;
  Status run_native_spans(const std::vector<Response>& responses, const Bucket& bucket,
                          const AllreducePlan& plan);
  // an Adasum bucket (executor_adasum.cc): packed, reduced per tensor, unpacked;
  Status run_adasum(const std::vector<Response>& responses, const Bucket& bucket,
                    const AllreducePlan& plan);
  // any other bucket: packed into the fusion buffer, reduced there, unpacked (tuned whole).
  Status run_packed(const std::vector<Response>& responses, const Bucket& bucket,
                    const AllreducePlan& plan);
  // The fusion buffer of `total` bytes: the backend's shared memory when it offers enough
  // (peers then reduce straight from it: single copy), else fusion_ (grown to `total`).
  uint8_t* fusion_buffer(size_t total);
  // The bucket's inputs into `fusion`, back to back in member order, prescaled (compressed:
  // cast to the half type); zeros for a member without an entry (a joined rank).
  void pack(uint8_t* fusion, const std::vector<Response>& responses, const Bucket& bucket,
            const AllreducePlan& plan);
  // pack()'s inverse into the outputs, postscaled; members without an entry are skipped.
  void unpack(const uint8_t* fusion, const std::vector<Response>& responses, const Bucket& bucket,
              const AllreducePlan& plan);
  void complete(const std::string& name, const Status& status);
  // Completes the bucket's handles with `status`: removes their entries from the queue (one
  // lock), then completes each handle. Members without an entry (a joined rank) are skipped.
  void complete_bucket(const Bucket& bucket, const Status& status);
  collectives::AlgorithmOptions algorithm_options();

  collectives::Communicator& comm_;
  const ExecutorOptions options_;
  int64_t fusion_threshold_bytes_;  // options_'s, until set_fusion_threshold
  TensorQueue& queue_;
  Timeline& timeline_;
  collectives::ScratchPool scratch_;
  std::vector<uint8_t> fusion_;  // grows only
  // execute(): the entry of each response of the list (null: none on this rank, or already
  // completed), looked up once per list instead of per use.
  std::vector<Entry*> entries_;
  std::vector<Entry*> done_entries_;                                // complete_bucket (reused)
  std::vector<std::shared_ptr<detail::HandleState>> done_handles_;  // complete_bucket (reused)
  FusionPlanner planner_;  // execute(): each round's buckets, in memory kept between rounds
  std::vector<collectives::ReduceSpan> spans_;  // run_allreduce(): an in-place bucket's (reused)
  std::vector<size_t> adasum_counts_;           // run_adasum(): the members' counts (reused)
  ExecutorStats stats_;
  AlgorithmTuner tuner_;  // engine thread (see algorithm_tuner.h)
};

}  // namespace engine
}  // namespace hora
