// The kernels of HoraAllreduce, HoraGroupedAllreduce, HoraBroadcast, HoraAllgather,
// HoraAlltoall, HoraReducescatter, HoraBarrier and HoraJoin (ops.cc): AsyncOpKernels that
// enqueue into hora's engine through the C API and complete from its callback, so no
// TensorFlow thread blocks while the ranks agree and the bytes move. Each is an AsyncKernel
// (kernel_support.h): the op's attrs and an enqueue function.
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

// Every collective's attrs: the process set it runs on (HoraBarrier, HoraJoin).
struct SetAttrs {
  int process_set = 0;

  explicit SetAttrs(OpKernelConstruction* c) {
    OP_REQUIRES_OK(c, c->GetAttr("process_set_id", &process_set));
  }
};

// A named collective's attrs: its name (collective_name) and its tensor as errors name it.
struct CollectiveAttrs : SetAttrs {
  std::string name;
  std::string what;

  explicit CollectiveAttrs(OpKernelConstruction* c) : SetAttrs(c) {
    OP_REQUIRES_OK(c, collective_name(c, &name));
    what = "tensor '" + name + "'";
  }

  // Input 0, which must have a first dimension (check_rank1), for the C API.
  absl::Status describe_rows(OpKernelContext* ctx, TensorRef* ref) const {
    TF_RETURN_IF_ERROR(check_rank1(ctx->input(0), name));
    return describe(ctx->input(0), what, ref);
  }
};

// A reducing collective's (HoraAllreduce, HoraGroupedAllreduce, HoraReducescatter).
struct ReducingAttrs : CollectiveAttrs {
  int op = HORA_C_AVERAGE;

  explicit ReducingAttrs(OpKernelConstruction* c) : CollectiveAttrs(c) {
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &op));
  }
};

// A scaled reduction's (HoraAllreduce, HoraGroupedAllreduce, HoraReducescatter).
struct ScaledAttrs : ReducingAttrs {
  float prescale = 1.0f;
  float postscale = 1.0f;

  explicit ScaledAttrs(OpKernelConstruction* c) : ReducingAttrs(c) {
    OP_REQUIRES_OK(c, c->GetAttr("prescale_factor", &prescale));
    OP_REQUIRES_OK(c, c->GetAttr("postscale_factor", &postscale));
  }
};

// An allreduce's (HoraAllreduce, HoraGroupedAllreduce): the reduction, scaled and compressed.
struct AllreduceAttrs : ScaledAttrs {
  int compression = HORA_C_COMPRESSION_NONE;

  explicit AllreduceAttrs(OpKernelConstruction* c) : ScaledAttrs(c) {
    OP_REQUIRES_OK(c, c->GetAttr("compression", &compression));
  }
};

absl::Status enqueue_allreduce(const AllreduceAttrs& a, const HoraCApi& api, OpKernelContext* ctx,
                               Completion* completion) {
  tf::Tensor* out = nullptr;
  TF_RETURN_IF_ERROR(output_like_input(ctx, 0, &out, false));
  TensorRef in_ref, out_ref;
  TF_RETURN_IF_ERROR(describe(ctx->input(0), a.what, &in_ref));
  TF_RETURN_IF_ERROR(describe(*out, a.what, &out_ref));
  api.allreduce(a.name.c_str(), &in_ref.c, &out_ref.c, a.op, a.prescale, a.postscale, a.compression,
                a.process_set, &Completion::trampoline, completion);
  return absl::OkStatus();
}

using AllreduceOp = AsyncKernel<AllreduceAttrs, enqueue_allreduce>;

absl::Status enqueue_grouped_allreduce(const AllreduceAttrs& a, const HoraCApi& api,
                                       OpKernelContext* ctx, Completion* completion) {
  const int n = ctx->num_inputs();
  std::vector<std::string> names(n);
  std::vector<const char*> name_ptrs(n);
  std::vector<TensorRef> in_refs(n), out_refs(n);
  std::vector<HoraTensor> ins(n), outs(n);
  for (int i = 0; i < n; ++i) {
    // Unnamed eager groups stay unnamed (hora numbers each member in call order).
    names[i] = a.name.empty() ? std::string() : a.name + "." + std::to_string(i);
    name_ptrs[i] = names[i].c_str();
    tf::Tensor* out = nullptr;
    TF_RETURN_IF_ERROR(output_like_input(ctx, i, &out, false));
    const std::string what = "tensor '" + names[i] + "'";
    TF_RETURN_IF_ERROR(describe(ctx->input(i), what, &in_refs[i]));
    TF_RETURN_IF_ERROR(describe(*out, what, &out_refs[i]));
    ins[i] = in_refs[i].c;
    outs[i] = out_refs[i].c;
  }
  api.grouped_allreduce(n, name_ptrs.data(), ins.data(), outs.data(), a.op, a.prescale, a.postscale,
                        a.compression, a.process_set, &Completion::trampoline, completion);
  return absl::OkStatus();
}

using GroupedAllreduceOp = AsyncKernel<AllreduceAttrs, enqueue_grouped_allreduce>;

// HoraBroadcast's attrs.
struct BroadcastAttrs : CollectiveAttrs {
  int root = 0;

  explicit BroadcastAttrs(OpKernelConstruction* c) : CollectiveAttrs(c) {
    OP_REQUIRES_OK(c, c->GetAttr("root_rank", &root));
  }
};

absl::Status enqueue_broadcast(const BroadcastAttrs& a, const HoraCApi& api, OpKernelContext* ctx,
                               Completion* completion) {
  tf::Tensor* out = nullptr;
  // hora broadcasts in place: the output starts as this rank's tensor.
  TF_RETURN_IF_ERROR(output_like_input(ctx, 0, &out, true));
  TensorRef ref;
  TF_RETURN_IF_ERROR(describe(*out, a.what, &ref));
  api.broadcast(a.name.c_str(), &ref.c, a.root, a.process_set, &Completion::trampoline, completion);
  return absl::OkStatus();
}

using BroadcastOp = AsyncKernel<BroadcastAttrs, enqueue_broadcast>;

absl::Status enqueue_allgather(const CollectiveAttrs& a, const HoraCApi& api, OpKernelContext* ctx,
                               Completion* completion) {
  TensorRef ref;
  TF_RETURN_IF_ERROR(a.describe_rows(ctx, &ref));
  api.allgather(a.name.c_str(), &ref.c, &Completion::allocate_output0, completion, a.process_set,
                &Completion::trampoline, completion);
  return absl::OkStatus();
}

using AllgatherOp = AsyncKernel<CollectiveAttrs, enqueue_allgather>;

absl::Status enqueue_alltoall(const CollectiveAttrs& a, const HoraCApi& api, OpKernelContext* ctx,
                              Completion* completion) {
  TF_RETURN_IF_ERROR(check_rank1(ctx->input(0), a.name));
  const tf::Tensor& splits_t = ctx->input(1);
  if (splits_t.dims() != 1)
    return absl::InvalidArgumentError("hora.InvalidArgumentError: tensor '" + a.name +
                                      "': splits must be a vector, got shape " +
                                      splits_t.shape().DebugString());
  auto flat = splits_t.flat<int64_t>();
  std::vector<int64_t> splits(flat.data(), flat.data() + flat.size());
  TensorRef ref;
  TF_RETURN_IF_ERROR(describe(ctx->input(0), a.what, &ref));
  completion->on_success = [ctx](const HoraResult& r) {
    tf::Tensor* received = nullptr;
    TF_RETURN_IF_ERROR(ctx->allocate_output(1, tf::TensorShape({r.splits_count}), &received));
    auto v = received->flat<int64_t>();
    for (int32_t i = 0; i < r.splits_count; ++i) v(i) = r.received_splits[i];
    return absl::OkStatus();
  };
  api.alltoall(a.name.c_str(), &ref.c, splits.data(), static_cast<int32_t>(splits.size()),
               &Completion::allocate_output0, completion, a.process_set, &Completion::trampoline,
               completion);
  return absl::OkStatus();
}

using AlltoallOp = AsyncKernel<CollectiveAttrs, enqueue_alltoall>;

absl::Status enqueue_reducescatter(const ScaledAttrs& a, const HoraCApi& api, OpKernelContext* ctx,
                                   Completion* completion) {
  TensorRef ref;
  TF_RETURN_IF_ERROR(a.describe_rows(ctx, &ref));
  api.reducescatter(a.name.c_str(), &ref.c, a.op, a.prescale, a.postscale,
                    &Completion::allocate_output0, completion, a.process_set,
                    &Completion::trampoline, completion);
  return absl::OkStatus();
}

using ReducescatterOp = AsyncKernel<ScaledAttrs, enqueue_reducescatter>;

absl::Status enqueue_barrier(const SetAttrs& a, const HoraCApi& api, OpKernelContext* /*ctx*/,
                             Completion* completion) {
  api.barrier(a.process_set, &Completion::trampoline, completion);
  return absl::OkStatus();
}

using BarrierOp = AsyncKernel<SetAttrs, enqueue_barrier>;

absl::Status enqueue_join(const SetAttrs& a, const HoraCApi& api, OpKernelContext* ctx,
                          Completion* completion) {
  completion->on_success = [ctx](const HoraResult& r) {
    tf::Tensor* out = nullptr;
    TF_RETURN_IF_ERROR(ctx->allocate_output(0, tf::TensorShape({}), &out));
    out->scalar<int32_t>()() = r.last_joined;
    return absl::OkStatus();
  };
  api.join(a.process_set, &Completion::trampoline, completion);
  return absl::OkStatus();
}

using JoinOp = AsyncKernel<SetAttrs, enqueue_join>;

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
