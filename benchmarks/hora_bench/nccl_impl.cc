// NCCL's own collectives as the reference on the GPU (--compare nccl with --device cuda):
// ncclAllReduce, ncclAllGather, ncclBroadcast, ncclReduceScatter and ncclAlltoAll on the
// benchmark's buffers, each followed by a cudaStreamSynchronize, as nccl-tests times them. Its
// own blocking communicator over env.gpu, its unique id through the job's store. kAverage is
// ncclAvg (NCCL's own, as nccl-tests runs it). Built with HORA_WITH_NCCL only.
#include <memory>
#include <string>

#include "benchmarks/hora_bench/implementation.h"
#include "benchmarks/hora_bench/native_call.h"

#if HORA_HAVE_NCCL
#include <cuda_runtime_api.h>
#include <nccl.h>

#include "collectives/backends/nccl/nccl_status.h"
#include "collectives/backends/nccl/nccl_types.h"
#include "collectives/backends/nccl/nccl_unique_id.h"
#include "kernels/cuda/cuda_status.h"
#endif

namespace hora {
namespace bench {

#if HORA_HAVE_NCCL
namespace {

using collectives::nccl_backend::nccl_status;

class NcclImplementation final : public Implementation {
 public:
  NcclImplementation() = default;
  ~NcclImplementation() override {
    if (comm_ != nullptr) ncclCommDestroy(comm_);
    if (stream_ != nullptr) cudaStreamDestroy(stream_);
  }
  NcclImplementation(const NcclImplementation&) = delete;
  NcclImplementation& operator=(const NcclImplementation&) = delete;

  Status init(const ImplementationEnv& env) {
    HORA_RETURN_IF_ERROR(
        kernels::cuda::cuda_status(cudaSetDevice(env.gpu), "nccl column: cudaSetDevice"));
    HORA_RETURN_IF_ERROR(
        kernels::cuda::cuda_status(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking),
                                   "nccl column: cudaStreamCreate"));
    HORA_ASSIGN_OR_RETURN(store_, implementation_store(env, "nccl"));
    HORA_ASSIGN_OR_RETURN(ncclUniqueId id, collectives::nccl_backend::exchange_unique_id(
                                               collectives::nccl_backend::real_nccl_api(), *store_,
                                               env.rank, env.size, Deadline::after_seconds(300)));
    return nccl_status(ncclCommInitRank(&comm_, env.size, id, env.rank),
                       "nccl column: ncclCommInitRank");
  }

  const std::string& name() const override { return name_; }
  bool is_hora() const override { return false; }

  Status supports(const Call& call) const override {
    if (!call.on_device) return Status::unimplemented("NCCL moves GPU buffers only");
    if (is_reduction(call.collective))
      return collectives::nccl_backend::nccl_reduce_type(call.dtype).status();
    return Status::OK();
  }

  Status run(const Call& c) override {
    const size_t bytes = c.count * data_type_bytes(c.dtype);
    ncclResult_t result = ncclSuccess;
    switch (c.collective) {
      case Collective::kAllreduce:
      case Collective::kReducescatter: {
        const ncclDataType_t type = collectives::nccl_backend::nccl_reduce_type(c.dtype).value();
        const ncclRedOp_t op =
            c.op == ReduceOp::kAverage ? ncclAvg : collectives::nccl_backend::nccl_reduce_op(c.op);
        result = c.collective == Collective::kAllreduce
                     ? ncclAllReduce(c.in, c.out, c.count, type, op, comm_, stream_)
                     : ncclReduceScatter(c.in, c.out, c.count, type, op, comm_, stream_);
        break;
      }
      case Collective::kAllgather:
        result = ncclAllGather(c.in, c.out, bytes, ncclUint8, comm_, stream_);
        break;
      case Collective::kBroadcast:
        result = ncclBroadcast(c.in, c.out, bytes, ncclUint8, c.root, comm_, stream_);
        break;
      case Collective::kAlltoall:
        result = ncclAlltoAll(c.in, c.out, bytes, ncclUint8, comm_, stream_);
        break;
    }
    HORA_RETURN_IF_ERROR(nccl_status(result, "nccl column", ncclGetLastError(comm_)));
    return kernels::cuda::cuda_status(cudaStreamSynchronize(stream_),
                                      "nccl column: cudaStreamSynchronize");
  }

 private:
  const std::string name_ = "nccl";
  std::unique_ptr<collectives::Store> store_;
  ncclComm_t comm_ = nullptr;
  cudaStream_t stream_ = nullptr;
};

}  // namespace

StatusOr<std::unique_ptr<Implementation>> make_nccl_implementation(const ImplementationEnv& env) {
  if (env.gpu < 0) return Status::invalid_argument("--compare nccl needs --device cuda");
  auto impl = std::make_unique<NcclImplementation>();
  HORA_RETURN_IF_ERROR(impl->init(env));
  return std::unique_ptr<Implementation>(std::move(impl));
}

#else

StatusOr<std::unique_ptr<Implementation>> make_nccl_implementation(const ImplementationEnv&) {
  return Status::unimplemented(
      "--compare nccl: hora was built without NCCL (configure with HORA_WITH_NCCL=ON)");
}

#endif

}  // namespace bench
}  // namespace hora
