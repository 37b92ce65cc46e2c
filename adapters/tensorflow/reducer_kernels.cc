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
    tf::Tensor* pending = nullptr;
    // The reducer reduces in place: into the gradient's own buffer when nobody else holds
    // it, else into a copy.
    OP_REQUIRES_OK(ctx, output_like_input(ctx, 0, &pending, true));
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

// HoraReducerSynchronize's attrs.
struct SynchronizeAttrs {
  int64_t reducer_id = 0;

  explicit SynchronizeAttrs(tf::OpKernelConstruction* c) {
    OP_REQUIRES_OK(c, c->GetAttr("reducer_id", &reducer_id));
  }
};

absl::Status enqueue_synchronize(const SynchronizeAttrs& a, const HoraCApi& api,
                                 tf::OpKernelContext* ctx, Completion* completion) {
  // The outputs are the inputs' buffers; nobody reads them before done runs.
  for (int i = 0; i < ctx->num_inputs(); ++i) ctx->set_output(i, ctx->input(i));
  api.reducer_synchronize(a.reducer_id, &Completion::trampoline, completion);
  return absl::OkStatus();
}

using ReducerSynchronizeOp = AsyncKernel<SynchronizeAttrs, enqueue_synchronize>;

}  // namespace

REGISTER_KERNEL_BUILDER(Name("HoraReducerGradientReady").Device(tf::DEVICE_CPU),
                        ReducerGradientReadyOp);
REGISTER_KERNEL_BUILDER(Name("HoraReducerSynchronize").Device(tf::DEVICE_CPU),
                        ReducerSynchronizeOp);

}  // namespace tf_ops
}  // namespace hora
