#include "adapters/tensorflow/kernel_support.h"

#include <algorithm>
#include <cstring>
#include <memory>

#include "adapters/tensorflow/c_api_link.h"

namespace hora {
namespace tf_ops {

namespace tf = ::tensorflow;

absl::Status connected_api(const HoraCApi** api_out) {
  const HoraCApi* table = api();
  if (table == nullptr)
    return absl::FailedPreconditionError(
        "hora.FailedPreconditionError: hora's TensorFlow ops are not connected to hora's "
        "engine; import hora.tensorflow (which connects them) rather than loading the op "
        "library yourself");
  *api_out = table;
  return absl::OkStatus();
}

absl::Status to_hora_dtype(tf::DataType dtype, const std::string& what, int32_t* out) {
  switch (dtype) {
    case tf::DT_UINT8: *out = HORA_C_UINT8; return absl::OkStatus();
    case tf::DT_INT8: *out = HORA_C_INT8; return absl::OkStatus();
    case tf::DT_UINT16: *out = HORA_C_UINT16; return absl::OkStatus();
    case tf::DT_INT16: *out = HORA_C_INT16; return absl::OkStatus();
    case tf::DT_INT32: *out = HORA_C_INT32; return absl::OkStatus();
    case tf::DT_INT64: *out = HORA_C_INT64; return absl::OkStatus();
    case tf::DT_HALF: *out = HORA_C_FLOAT16; return absl::OkStatus();
    case tf::DT_BFLOAT16: *out = HORA_C_BFLOAT16; return absl::OkStatus();
    case tf::DT_FLOAT: *out = HORA_C_FLOAT32; return absl::OkStatus();
    case tf::DT_DOUBLE: *out = HORA_C_FLOAT64; return absl::OkStatus();
    case tf::DT_BOOL: *out = HORA_C_BOOL; return absl::OkStatus();
    default:
      return absl::InvalidArgumentError("hora.InvalidArgumentError: " + what + " has dtype " +
                                        tf::DataTypeString(dtype) + ", which hora does not take");
  }
}

absl::Status describe(const tf::Tensor& t, const std::string& what, TensorRef* ref) {
  int32_t dtype = 0;
  TF_RETURN_IF_ERROR(to_hora_dtype(t.dtype(), what, &dtype));
  ref->shape.clear();
  for (int i = 0; i < t.dims(); ++i) ref->shape.push_back(t.dim_size(i));
  ref->c.data = const_cast<char*>(t.tensor_data().data());
  ref->c.dtype = dtype;
  ref->c.ndim = static_cast<int32_t>(ref->shape.size());
  ref->c.shape = ref->shape.data();
  return absl::OkStatus();
}

absl::Status output_like_input(tf::OpKernelContext* ctx, int index, tf::Tensor** out,
                               bool copy_input) {
  const tf::Tensor& in = ctx->input(index);
  TF_RETURN_IF_ERROR(ctx->forward_input_or_allocate_output({index}, index, in.shape(), out));
  if (copy_input && (*out)->tensor_data().data() != in.tensor_data().data())
    std::memcpy(const_cast<char*>((*out)->tensor_data().data()), in.tensor_data().data(),
                in.TotalBytes());
  return absl::OkStatus();
}

absl::Status status_of(const HoraResult& r) {
  std::string message = r.message != nullptr ? r.message : "";
  switch (r.code) {
    case HORA_C_INVALID_ARGUMENT:
      return absl::InvalidArgumentError("hora.InvalidArgumentError: " + message);
    case HORA_C_FAILED_PRECONDITION:
      return absl::FailedPreconditionError("hora.FailedPreconditionError: " + message);
    case HORA_C_MISMATCH: return absl::FailedPreconditionError("hora.MismatchError: " + message);
    case HORA_C_TIMEOUT: return absl::DeadlineExceededError("hora.HoraTimeoutError: " + message);
    case HORA_C_REMOTE: return absl::AbortedError("hora.RemoteError: " + message);
    case HORA_C_IO: return absl::UnavailableError("hora.HoraIOError: " + message);
    case HORA_C_UNIMPLEMENTED:
      return absl::UnimplementedError("hora.UnimplementedError: " + message);
    default: return absl::InternalError("hora.InternalError: " + message);
  }
}

absl::Status collective_name(tf::OpKernelConstruction* c, std::string* name) {
  bool from_node = true;
  TF_RETURN_IF_ERROR(c->GetAttr("tensor_name", name));
  TF_RETURN_IF_ERROR(c->GetAttr("name_from_node", &from_node));
  if (name->empty() && from_node) *name = c->def().name();
  return absl::OkStatus();
}

void Completion::trampoline(void* self, const HoraResult* result) {
  std::unique_ptr<Completion> c(static_cast<Completion*>(self));
  absl::Status s = result->code == HORA_C_OK
                       ? (c->on_success ? c->on_success(*result) : absl::OkStatus())
                       : status_of(*result);
  if (!s.ok()) c->context_->SetStatus(s);
  finish(c.release());
}

void Completion::finish(Completion* self) {
  tf::AsyncOpKernel::DoneCallback done = std::move(self->done_);
  delete self;
  done();
}

int32_t Completion::allocate_output0(void* self, int32_t /*dtype*/, int32_t ndim,
                                     const int64_t* shape, void** data, char* message,
                                     int32_t message_bytes) {
  auto* c = static_cast<Completion*>(self);
  tf::TensorShape tf_shape;
  absl::Status s;
  for (int32_t i = 0; i < ndim && s.ok(); ++i) s = tf_shape.AddDimWithStatus(shape[i]);
  tf::Tensor* out = nullptr;
  if (s.ok()) s = c->context_->allocate_output(0, tf_shape, &out);
  if (!s.ok()) {
    const std::string text(s.message());
    const size_t n = std::min(text.size(), static_cast<size_t>(std::max(message_bytes - 1, 0)));
    if (message_bytes > 0) {
      std::memcpy(message, text.data(), n);
      message[n] = '\0';
    }
    return 1;
  }
  *data = const_cast<char*>(out->tensor_data().data());
  return 0;
}

}  // namespace tf_ops
}  // namespace hora
