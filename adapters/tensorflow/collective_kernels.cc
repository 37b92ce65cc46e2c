// The kernels of HoraAllreduce, HoraGroupedAllreduce, HoraBroadcast, HoraAllgather,
// HoraAlltoall, HoraReducescatter, HoraBarrier and HoraJoin (ops.cc): AsyncOpKernels that
// enqueue into hora's engine through the C API and complete from its callback, so no
// TensorFlow thread blocks while the ranks agree and the bytes move.
#include <memory>
#include <string>
#include <vector>

#include "adapters/tensorflow/kernel_support.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace hora {
namespace tf_ops {
namespace {

namespace tf = ::tensorflow;
using tf::AsyncOpKernel;
using tf::OpKernelConstruction;
using tf::OpKernelContext;

// The output `index` in input `index`'s buffer when TensorFlow allows it (nobody else holds
// the input), else a new buffer holding a copy of the input.
absl::Status output_like_input(OpKernelContext* ctx, int index, tf::Tensor** out, bool copy_input) {
  const tf::Tensor& in = ctx->input(index);
  TF_RETURN_IF_ERROR(ctx->forward_input_or_allocate_output({index}, index, in.shape(), out));
  if (copy_input && (*out)->tensor_data().data() != in.tensor_data().data())
    std::memcpy(const_cast<char*>((*out)->tensor_data().data()), in.tensor_data().data(),
                in.TotalBytes());
  return absl::OkStatus();
}

class AllreduceOp : public AsyncOpKernel {
 public:
  explicit AllreduceOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    OP_REQUIRES_OK(c, collective_name(c, &name_));
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &op_));
    OP_REQUIRES_OK(c, c->GetAttr("prescale_factor", &prescale_));
    OP_REQUIRES_OK(c, c->GetAttr("postscale_factor", &postscale_));
    OP_REQUIRES_OK(c, c->GetAttr("compression", &compression_));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const HoraCApi* api = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, connected_api(&api), done);
    tf::Tensor* out = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, output_like_input(ctx, 0, &out, false), done);
    TensorRef in_ref, out_ref;
    OP_REQUIRES_OK_ASYNC(ctx, describe(ctx->input(0), "tensor '" + name_ + "'", &in_ref), done);
    OP_REQUIRES_OK_ASYNC(ctx, describe(*out, "tensor '" + name_ + "'", &out_ref), done);
    auto* completion = new Completion(ctx, std::move(done));
    api->allreduce(name_.c_str(), &in_ref.c, &out_ref.c, op_, prescale_, postscale_, compression_,
                   &Completion::trampoline, completion);
  }

 private:
  std::string name_;
  int op_ = HORA_C_AVERAGE;
  float prescale_ = 1.0f;
  float postscale_ = 1.0f;
  int compression_ = HORA_C_COMPRESSION_NONE;
};

class GroupedAllreduceOp : public AsyncOpKernel {
 public:
  explicit GroupedAllreduceOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    OP_REQUIRES_OK(c, collective_name(c, &name_));
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &op_));
    OP_REQUIRES_OK(c, c->GetAttr("prescale_factor", &prescale_));
    OP_REQUIRES_OK(c, c->GetAttr("postscale_factor", &postscale_));
    OP_REQUIRES_OK(c, c->GetAttr("compression", &compression_));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const HoraCApi* api = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, connected_api(&api), done);
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
      OP_REQUIRES_OK_ASYNC(ctx, output_like_input(ctx, i, &out, false), done);
      const std::string what = "tensor '" + names[i] + "'";
      OP_REQUIRES_OK_ASYNC(ctx, describe(ctx->input(i), what, &in_refs[i]), done);
      OP_REQUIRES_OK_ASYNC(ctx, describe(*out, what, &out_refs[i]), done);
      ins[i] = in_refs[i].c;
      outs[i] = out_refs[i].c;
    }
    auto* completion = new Completion(ctx, std::move(done));
    api->grouped_allreduce(n, name_ptrs.data(), ins.data(), outs.data(), op_, prescale_, postscale_,
                           compression_, &Completion::trampoline, completion);
  }

 private:
  std::string name_;
  int op_ = HORA_C_AVERAGE;
  float prescale_ = 1.0f;
  float postscale_ = 1.0f;
  int compression_ = HORA_C_COMPRESSION_NONE;
};

class BroadcastOp : public AsyncOpKernel {
 public:
  explicit BroadcastOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    OP_REQUIRES_OK(c, collective_name(c, &name_));
    OP_REQUIRES_OK(c, c->GetAttr("root_rank", &root_));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const HoraCApi* api = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, connected_api(&api), done);
    tf::Tensor* out = nullptr;
    // hora broadcasts in place: the output starts as this rank's tensor.
    OP_REQUIRES_OK_ASYNC(ctx, output_like_input(ctx, 0, &out, true), done);
    TensorRef ref;
    OP_REQUIRES_OK_ASYNC(ctx, describe(*out, "tensor '" + name_ + "'", &ref), done);
    auto* completion = new Completion(ctx, std::move(done));
    api->broadcast(name_.c_str(), &ref.c, root_, &Completion::trampoline, completion);
  }

 private:
  std::string name_;
  int root_ = 0;
};

// Inputs must have a first dimension to gather, scatter or split along.
absl::Status check_rank1(const tf::Tensor& t, const std::string& name) {
  if (t.dims() == 0)
    return absl::InvalidArgumentError("hora.InvalidArgumentError: tensor '" + name +
                                      "' is a scalar; this collective works along the first "
                                      "dimension, so it needs at least one");
  return absl::OkStatus();
}

class AllgatherOp : public AsyncOpKernel {
 public:
  explicit AllgatherOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    OP_REQUIRES_OK(c, collective_name(c, &name_));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const HoraCApi* api = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, connected_api(&api), done);
    OP_REQUIRES_OK_ASYNC(ctx, check_rank1(ctx->input(0), name_), done);
    TensorRef ref;
    OP_REQUIRES_OK_ASYNC(ctx, describe(ctx->input(0), "tensor '" + name_ + "'", &ref), done);
    auto* completion = new Completion(ctx, std::move(done));
    api->allgather(name_.c_str(), &ref.c, &Completion::allocate_output0, completion,
                   &Completion::trampoline, completion);
  }

 private:
  std::string name_;
};

class AlltoallOp : public AsyncOpKernel {
 public:
  explicit AlltoallOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    OP_REQUIRES_OK(c, collective_name(c, &name_));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const HoraCApi* api = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, connected_api(&api), done);
    OP_REQUIRES_OK_ASYNC(ctx, check_rank1(ctx->input(0), name_), done);
    const tf::Tensor& splits_t = ctx->input(1);
    OP_REQUIRES_ASYNC(ctx, splits_t.dims() == 1,
                      absl::InvalidArgumentError("hora.InvalidArgumentError: tensor '" + name_ +
                                                 "': splits must be a vector, got shape " +
                                                 splits_t.shape().DebugString()),
                      done);
    auto flat = splits_t.flat<int64_t>();
    std::vector<int64_t> splits(flat.data(), flat.data() + flat.size());
    TensorRef ref;
    OP_REQUIRES_OK_ASYNC(ctx, describe(ctx->input(0), "tensor '" + name_ + "'", &ref), done);
    auto* completion = new Completion(ctx, std::move(done));
    completion->on_success = [ctx](const HoraResult& r) {
      tf::Tensor* received = nullptr;
      TF_RETURN_IF_ERROR(ctx->allocate_output(1, tf::TensorShape({r.splits_count}), &received));
      auto v = received->flat<int64_t>();
      for (int32_t i = 0; i < r.splits_count; ++i) v(i) = r.received_splits[i];
      return absl::OkStatus();
    };
    api->alltoall(name_.c_str(), &ref.c, splits.data(), static_cast<int32_t>(splits.size()),
                  &Completion::allocate_output0, completion, &Completion::trampoline, completion);
  }

 private:
  std::string name_;
};

class ReducescatterOp : public AsyncOpKernel {
 public:
  explicit ReducescatterOp(OpKernelConstruction* c) : AsyncOpKernel(c) {
    OP_REQUIRES_OK(c, collective_name(c, &name_));
    OP_REQUIRES_OK(c, c->GetAttr("reduce_op", &op_));
  }

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const HoraCApi* api = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, connected_api(&api), done);
    OP_REQUIRES_OK_ASYNC(ctx, check_rank1(ctx->input(0), name_), done);
    TensorRef ref;
    OP_REQUIRES_OK_ASYNC(ctx, describe(ctx->input(0), "tensor '" + name_ + "'", &ref), done);
    auto* completion = new Completion(ctx, std::move(done));
    api->reducescatter(name_.c_str(), &ref.c, op_, &Completion::allocate_output0, completion,
                       &Completion::trampoline, completion);
  }

 private:
  std::string name_;
  int op_ = HORA_C_AVERAGE;
};

class BarrierOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const HoraCApi* api = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, connected_api(&api), done);
    api->barrier(&Completion::trampoline, new Completion(ctx, std::move(done)));
  }
};

class JoinOp : public AsyncOpKernel {
 public:
  using AsyncOpKernel::AsyncOpKernel;

  void ComputeAsync(OpKernelContext* ctx, DoneCallback done) override {
    const HoraCApi* api = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, connected_api(&api), done);
    auto* completion = new Completion(ctx, std::move(done));
    completion->on_success = [ctx](const HoraResult& r) {
      tf::Tensor* out = nullptr;
      TF_RETURN_IF_ERROR(ctx->allocate_output(0, tf::TensorShape({}), &out));
      out->scalar<int32_t>()() = r.last_joined;
      return absl::OkStatus();
    };
    api->join(&Completion::trampoline, completion);
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
