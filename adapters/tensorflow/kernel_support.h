// What every hora kernel needs: the connected C API, TensorFlow tensors as HoraTensor views,
// hora results as TensorFlow statuses, and the Completion that ends an asynchronous kernel
// when hora's engine calls back.
//
// Completion: one per ComputeAsync. AsyncKernel creates it; the kernel's enqueue passes
// Completion::trampoline and the Completion itself as the C API's done/done_ctx, and never
// touches it afterwards: the trampoline (on hora's engine thread, or on the kernel's thread
// for an error found at enqueue) runs on_success when the collective succeeded, sets the
// kernel's status, calls TensorFlow's done callback and deletes the Completion. TensorFlow's
// executor only queues the nodes that became ready when done runs, so the engine thread
// stays short.
//
// AsyncKernel: the ComputeAsync every asynchronous hora kernel shares (connect, then enqueue
// with a Completion, or fail before enqueueing).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <utility>
#include <vector>

#include "adapters/python/c_api.h"
#include "tensorflow/core/framework/op_kernel.h"

namespace hora {
namespace tf_ops {

// The connected table, or FailedPrecondition saying how to connect it.
absl::Status connected_api(const HoraCApi** api);

// A TensorFlow tensor as the C API sees it. The HoraTensor points at `shape`: keep the
// TensorRef where it is while the C call that receives `c` runs.
struct TensorRef {
  HoraTensor c{};
  std::vector<int64_t> shape;
  TensorRef() = default;
  TensorRef(const TensorRef&) = delete;
  TensorRef& operator=(const TensorRef&) = delete;
};
// InvalidArgument naming `what` when the dtype is not one hora takes.
absl::Status to_hora_dtype(::tensorflow::DataType dtype, const std::string& what, int32_t* out);
absl::Status describe(const ::tensorflow::Tensor& t, const std::string& what, TensorRef* ref);

// The output `index` in input `index`'s buffer when TensorFlow allows it (nobody else holds
// the input), else in a new buffer, holding a copy of the input when `copy_input`.
absl::Status output_like_input(::tensorflow::OpKernelContext* ctx, int index,
                               ::tensorflow::Tensor** out, bool copy_input);

// A failed HoraResult as a TensorFlow status whose message starts with the hora.errors class
// ("hora.MismatchError: tensor 'x': ..."), so the Python layer can raise that class.
absl::Status status_of(const HoraResult& result);

// The collective's name (see ops.cc): the attr tensor_name, else the node name when the attr
// name_from_node is true, else "" (numbered by hora).
absl::Status collective_name(::tensorflow::OpKernelConstruction* c, std::string* name);

class Completion {
 public:
  Completion(::tensorflow::OpKernelContext* context, ::tensorflow::AsyncOpKernel::DoneCallback done)
      : context_(context), done_(std::move(done)) {}

  // Runs on the completing thread after a successful collective, before done; its error
  // becomes the kernel's.
  std::function<absl::Status(const HoraResult&)> on_success;

  // HoraDoneFn: finishes and deletes the Completion at `self`.
  static void trampoline(void* self, const HoraResult* result);
  // Calls done and deletes the Completion at `self`; the kernel's status is set already.
  static void finish(Completion* self);
  // HoraAllocFn allocating output 0 of the Completion at `self` with the given shape.
  static int32_t allocate_output0(void* self, int32_t dtype, int32_t ndim, const int64_t* shape,
                                  void** data, char* message, int32_t message_bytes);

  ::tensorflow::OpKernelContext* context() const { return context_; }

 private:
  ::tensorflow::OpKernelContext* context_;
  ::tensorflow::AsyncOpKernel::DoneCallback done_;
};

// An asynchronous hora kernel: its op's attrs, read once by `Attrs(OpKernelConstruction*)`
// (which fails the construction with OP_REQUIRES_OK), and its enqueue function. ComputeAsync
// creates the call's Completion and passes it, with the attrs and the connected C API, to
// `enqueue`, which checks and describes the tensors and, as its last step, passes
// `completion` to the C call, which owns it from then on, and returns OK. An error it returns
// before that fails the kernel (as OP_REQUIRES_OK_ASYNC would) and finishes the Completion.
// `enqueue` is a template argument: a direct call, no virtual one beyond ComputeAsync.
template <class Attrs, absl::Status (*enqueue)(const Attrs&, const HoraCApi&,
                                               ::tensorflow::OpKernelContext*, Completion*)>
class AsyncKernel final : public ::tensorflow::AsyncOpKernel {
 public:
  explicit AsyncKernel(::tensorflow::OpKernelConstruction* c) : AsyncOpKernel(c), attrs_(c) {}

  void ComputeAsync(::tensorflow::OpKernelContext* ctx, DoneCallback done) override {
    auto* completion = new Completion(ctx, std::move(done));
    const HoraCApi* api = nullptr;
    absl::Status s = connected_api(&api);
    if (s.ok()) s = enqueue(attrs_, *api, ctx, completion);
    if (!s.ok()) {
      ctx->CtxFailureWithWarning(__FILE__, __LINE__, s);
      Completion::finish(completion);
    }
  }

 private:
  const Attrs attrs_;
};

}  // namespace tf_ops
}  // namespace hora
