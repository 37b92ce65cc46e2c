// The kernels of HoraAllreduce, HoraGroupedAllreduce, HoraBroadcast, HoraAllgather,
// HoraAlltoall, HoraReducescatter, HoraBarrier and HoraJoin (ops.cc): AsyncOpKernels that
// enqueue into hora's engine through the C API and complete from its callback, so no
// TensorFlow thread blocks while the ranks agree and the bytes move.
#include <string>
#include <vector>

#include "adapters/tensorflow/kernel_support.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace hora {
namespace tf_ops {
namespace {

namespace tf = ::tensorflow;
using tf::OpKernelConstruction;
using tf::OpKernelContext;

// Inputs must have a first dimension to gather, scatter or split along.
absl::Status check_rank1(const tf::Tensor& t, const std::string& name) {
  if (t.dims() == 0)
    return absl::InvalidArgumentError("hora.InvalidArgumentError: tensor '" + name +
                                      "' is a scalar; this collective works along the first "
                                      "dimension, so it needs at least one");
  return absl::OkStatus();
}

// The kernel of a named collective (collective_name).
template <class Kernel>
class CollectiveKernel : public AsyncKernel<Kernel> {
 public:
  explicit CollectiveKernel(OpKernelConstruction* c) : AsyncKernel<Kernel>(c) {
    OP_REQUIRES_OK(c, collective_name(c, &name_));
    what_ = "tensor '" + name_ + "'";
  }

 protected:
  // Input 0, which must have a first dimension (check_rank1), for the C API.
  absl::Status describe_rows(OpKernelContext* ctx, TensorRef* ref) const {
    TF_RETURN_IF_ERROR(check_rank1(ctx->input(0), name_));
    return describe(ctx->input(0), what_, ref);
  }

  std::string name_;
  std::string what_;  // the tensor as errors name it
};

// The kernel of a reducing collective (HoraAllreduce, HoraGroupedAllreduce,
// HoraReducescatter): a named collective with its reduce_op.
template <class Kernel>
class ReducingKernel : public CollectiveKernel<Kernel> {
 public:
  explicit ReducingKernel(OpKernelConstruction* c) : CollectiveKernel<Kernel>(c) {
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &op_));
  }

 protected:
  int op_ = HORA_C_AVERAGE;
};

// The kernel of an allreduce (HoraAllreduce, HoraGroupedAllreduce): a reducing collective
// with the allreduce's scaling and compression.
template <class Kernel>
class AllreduceKernel : public ReducingKernel<Kernel> {
 public:
  explicit AllreduceKernel(OpKernelConstruction* c) : ReducingKernel<Kernel>(c) {
    OP_REQUIRES_OK(c, c->GetAttr("prescale_factor", &prescale_));
    OP_REQUIRES_OK(c, c->GetAttr("postscale_factor", &postscale_));
    OP_REQUIRES_OK(c, c->GetAttr("compression", &compression_));
  }

 protected:
  float prescale_ = 1.0f;
  float postscale_ = 1.0f;
  int compression_ = HORA_C_COMPRESSION_NONE;
};

class AllreduceOp : public AllreduceKernel<AllreduceOp> {
 public:
  using AllreduceKernel::AllreduceKernel;

  absl::Status enqueue(const HoraCApi& api, OpKernelContext* ctx, Completion* completion) {
    tf::Tensor* out = nullptr;
    TF_RETURN_IF_ERROR(output_like_input(ctx, 0, &out, false));
    TensorRef in_ref, out_ref;
    TF_RETURN_IF_ERROR(describe(ctx->input(0), what_, &in_ref));
    TF_RETURN_IF_ERROR(describe(*out, what_, &out_ref));
    api.allreduce(name_.c_str(), &in_ref.c, &out_ref.c, op_, prescale_, postscale_, compression_,
                  &Completion::trampoline, completion);
    return absl::OkStatus();
  }
};

class GroupedAllreduceOp : public AllreduceKernel<GroupedAllreduceOp> {
 public:
  using AllreduceKernel::AllreduceKernel;

  absl::Status enqueue(const HoraCApi& api, OpKernelContext* ctx, Completion* completion) {
    const int n = ctx->num_inputs();
    std::vector<std::string> names(n);
    std::vector<const char*> name_ptrs(n);
    std::vector<TensorRef> in_refs(n), out_refs(n);
    std::vector<HoraTensor> ins(n), outs(n);
    for (int i = 0; i < n; ++i) {
      // Unnamed eager groups stay unnamed (hora numbers each member in call order).
      names[i] = name_.empty() ? std::string() : name_ + "." + std::to_string(i);
      name_ptrs[i] = names[i].c_str();
      tf::Tensor* out = nullptr;
      TF_RETURN_IF_ERROR(output_like_input(ctx, i, &out, false));
      const std::string what = "tensor '" + names[i] + "'";
      TF_RETURN_IF_ERROR(describe(ctx->input(i), what, &in_refs[i]));
      TF_RETURN_IF_ERROR(describe(*out, what, &out_refs[i]));
      ins[i] = in_refs[i].c;
      outs[i] = out_refs[i].c;
    }
    api.grouped_allreduce(n, name_ptrs.data(), ins.data(), outs.data(), op_, prescale_, postscale_,
                          compression_, &Completion::trampoline, completion);
    return absl::OkStatus();
  }
};

class BroadcastOp : public CollectiveKernel<BroadcastOp> {
 public:
  explicit BroadcastOp(OpKernelConstruction* c) : CollectiveKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("root_rank", &root_));
  }

  absl::Status enqueue(const HoraCApi& api, OpKernelContext* ctx, Completion* completion) {
    tf::Tensor* out = nullptr;
    // hora broadcasts in place: the output starts as this rank's tensor.
    TF_RETURN_IF_ERROR(output_like_input(ctx, 0, &out, true));
    TensorRef ref;
    TF_RETURN_IF_ERROR(describe(*out, what_, &ref));
    api.broadcast(name_.c_str(), &ref.c, root_, &Completion::trampoline, completion);
    return absl::OkStatus();
  }

 private:
  int root_ = 0;
};

class AllgatherOp : public CollectiveKernel<AllgatherOp> {
 public:
  using CollectiveKernel::CollectiveKernel;

  absl::Status enqueue(const HoraCApi& api, OpKernelContext* ctx, Completion* completion) {
    TensorRef ref;
    TF_RETURN_IF_ERROR(describe_rows(ctx, &ref));
    api.allgather(name_.c_str(), &ref.c, &Completion::allocate_output0, completion,
                  &Completion::trampoline, completion);
    return absl::OkStatus();
  }
};

class AlltoallOp : public CollectiveKernel<AlltoallOp> {
 public:
  using CollectiveKernel::CollectiveKernel;

  absl::Status enqueue(const HoraCApi& api, OpKernelContext* ctx, Completion* completion) {
    TF_RETURN_IF_ERROR(check_rank1(ctx->input(0), name_));
    const tf::Tensor& splits_t = ctx->input(1);
    if (splits_t.dims() != 1)
      return absl::InvalidArgumentError("hora.InvalidArgumentError: tensor '" + name_ +
                                        "': splits must be a vector, got shape " +
                                        splits_t.shape().DebugString());
    auto flat = splits_t.flat<int64_t>();
    std::vector<int64_t> splits(flat.data(), flat.data() + flat.size());
    TensorRef ref;
    TF_RETURN_IF_ERROR(describe(ctx->input(0), what_, &ref));
    completion->on_success = [ctx](const HoraResult& r) {
      tf::Tensor* received = nullptr;
      TF_RETURN_IF_ERROR(ctx->allocate_output(1, tf::TensorShape({r.splits_count}), &received));
      auto v = received->flat<int64_t>();
      for (int32_t i = 0; i < r.splits_count; ++i) v(i) = r.received_splits[i];
      return absl::OkStatus();
    };
    api.alltoall(name_.c_str(), &ref.c, splits.data(), static_cast<int32_t>(splits.size()),
                 &Completion::allocate_output0, completion, &Completion::trampoline, completion);
    return absl::OkStatus();
  }
};

class ReducescatterOp : public ReducingKernel<ReducescatterOp> {
 public:
  using ReducingKernel::ReducingKernel;

  absl::Status enqueue(const HoraCApi& api, OpKernelContext* ctx, Completion* completion) {
    TensorRef ref;
    TF_RETURN_IF_ERROR(describe_rows(ctx, &ref));
    api.reducescatter(name_.c_str(), &ref.c, op_, &Completion::allocate_output0, completion,
                      &Completion::trampoline, completion);
    return absl::OkStatus();
  }
};

class BarrierOp : public AsyncKernel<BarrierOp> {
 public:
  using AsyncKernel::AsyncKernel;

  absl::Status enqueue(const HoraCApi& api, OpKernelContext* /*ctx*/, Completion* completion) {
    api.barrier(&Completion::trampoline, completion);
    return absl::OkStatus();
  }
};

class JoinOp : public AsyncKernel<JoinOp> {
 public:
  using AsyncKernel::AsyncKernel;

  absl::Status enqueue(const HoraCApi& api, OpKernelContext* ctx, Completion* completion) {
    completion->on_success = [ctx](const HoraResult& r) {
      tf::Tensor* out = nullptr;
      TF_RETURN_IF_ERROR(ctx->allocate_output(0, tf::TensorShape({}), &out));
      out->scalar<int32_t>()() = r.last_joined;
      return absl::OkStatus();
    };
    api.join(&Completion::trampoline, completion);
    return absl::OkStatus();
  }
};

}  // namespace

using tf::DEVICE_CPU;
REGISTER_KERNEL_BUILDER(Name("HoraAllreduce").Device(DEVICE_CPU), AllreduceOp);
REGISTER_KERNEL_BUILDER(Name("HoraGroupedAllreduce").Device(DEVICE_CPU), GroupedAllreduceOp);
REGISTER_KERNEL_BUILDER(Name("HoraBroadcast").Device(DEVICE_CPU), BroadcastOp);
REGISTER_KERNEL_BUILDER(Name("HoraAllgather").Device(DEVICE_CPU), AllgatherOp);
REGISTER_KERNEL_BUILDER(Name("HoraAlltoall").Device(DEVICE_CPU), AlltoallOp);
REGISTER_KERNEL_BUILDER(Name("HoraReducescatter").Device(DEVICE_CPU), ReducescatterOp);
REGISTER_KERNEL_BUILDER(Name("HoraBarrier").Device(DEVICE_CPU), BarrierOp);
REGISTER_KERNEL_BUILDER(Name("HoraJoin").Device(DEVICE_CPU), JoinOp);

}  // namespace tf_ops
}  // namespace hora
