// The kernels of HoraReducerGradientReady and HoraReducerSynchronize (ops.cc): a Keras
// DistributedOptimizer's step through hora's GradientReducer (hora/gradient_reducer.h), the
// same bookkeeping every hora adapter uses.
//
// The graph: one HoraReducerGradientReady per gradient, then one HoraReducerSynchronize taking
// every gradient-ready op's output. Each gradient-ready op runs as soon as its gradient exists
// (TensorFlow's executor follows the data), hands the gradient's buffer to the reducer, which
// starts its allreduce at once, and returns: the allreduces overlap the rest of the backward
// pass. Its output is that buffer, still being reduced; only the synchronize op reads it, and
// that completes once the reducer's step did, forwarding each buffer, now reduced, as output.
#include <cstring>
#include <string>

#include "adapters/tensorflow/kernel_support.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace hora {
namespace tf_ops {
namespace {

namespace tf = ::tensorflow;

class ReducerGradientReadyOp : public tf::OpKernel {
 public:
  explicit ReducerGradientReadyOp(tf::OpKernelConstruction* c) : tf::OpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("reducer_id", &reducer_id_));
    OP_REQUIRES_OK(c, c->GetAttr("index", &index_));
  }

  void Compute(tf::OpKernelContext* ctx) override {
    const HoraCApi* api = nullptr;
    OP_REQUIRES_OK(ctx, connected_api(&api));
    const tf::Tensor& grad = ctx->input(0);
    tf::Tensor* pending = nullptr;
    // The reducer reduces in place: into the gradient's own buffer when nobody else holds
    // it, else into a copy.
    OP_REQUIRES_OK(ctx, ctx->forward_input_or_allocate_output({0}, 0, grad.shape(), &pending));
    if (pending->tensor_data().data() != grad.tensor_data().data())
      std::memcpy(const_cast<char*>(pending->tensor_data().data()), grad.tensor_data().data(),
                  grad.TotalBytes());
    TensorRef ref;
    OP_REQUIRES_OK(ctx, describe(*pending, "gradient " + std::to_string(index_), &ref));
    char message[1024] = {0};
    const int32_t code = api->reducer_gradient_ready(reducer_id_, static_cast<int32_t>(index_),
                                                     &ref.c, message, sizeof(message));
    if (code != HORA_C_OK) {
      HoraResult r{code, message, -1, 0, nullptr};
      ctx->SetStatus(status_of(r));
    }
  }

 private:
  int64_t reducer_id_ = 0;
  int64_t index_ = 0;
};

class ReducerSynchronizeOp : public tf::AsyncOpKernel {
 public:
  explicit ReducerSynchronizeOp(tf::OpKernelConstruction* c) : tf::AsyncOpKernel(c) {
    OP_REQUIRES_OK(c, c->GetAttr("reducer_id", &reducer_id_));
  }

  void ComputeAsync(tf::OpKernelContext* ctx, DoneCallback done) override {
    const HoraCApi* api = nullptr;
    OP_REQUIRES_OK_ASYNC(ctx, connected_api(&api), done);
    // The outputs are the inputs' buffers; nobody reads them before done runs.
    for (int i = 0; i < ctx->num_inputs(); ++i) ctx->set_output(i, ctx->input(i));
    api->reducer_synchronize(reducer_id_, &Completion::trampoline,
                             new Completion(ctx, std::move(done)));
  }

 private:
  int64_t reducer_id_ = 0;
};

}  // namespace

REGISTER_KERNEL_BUILDER(Name("HoraReducerGradientReady").Device(tf::DEVICE_CPU),
                        ReducerGradientReadyOp);
REGISTER_KERNEL_BUILDER(Name("HoraReducerSynchronize").Device(tf::DEVICE_CPU),
                        ReducerSynchronizeOp);

}  // namespace tf_ops
}  // namespace hora
