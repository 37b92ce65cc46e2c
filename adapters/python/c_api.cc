// The HoraCApi table (c_api.h) over hora's public API, and its Python face: the table's
// address for op libraries, and the gradient reducers those ops drive.
#include "adapters/python/c_api.h"

#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <cstring>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "adapters/python/binding.h"
#include "adapters/python/c_api_reducers.h"
#include "adapters/python/errors.h"
#include "hora/hora.h"

namespace py = pybind11;

namespace hora {
namespace python {
namespace {

static_assert(HORA_C_UINT8 == static_cast<int>(DataType::kUint8) &&
                  HORA_C_INT8 == static_cast<int>(DataType::kInt8) &&
                  HORA_C_INT32 == static_cast<int>(DataType::kInt32) &&
                  HORA_C_INT64 == static_cast<int>(DataType::kInt64) &&
                  HORA_C_FLOAT16 == static_cast<int>(DataType::kFloat16) &&
                  HORA_C_BFLOAT16 == static_cast<int>(DataType::kBFloat16) &&
                  HORA_C_FLOAT32 == static_cast<int>(DataType::kFloat32) &&
                  HORA_C_FLOAT64 == static_cast<int>(DataType::kFloat64) &&
                  HORA_C_INT16 == static_cast<int>(DataType::kInt16) &&
                  HORA_C_UINT16 == static_cast<int>(DataType::kUint16) &&
                  HORA_C_BOOL == static_cast<int>(DataType::kBool),
              "c_api.h's dtype values must be hora::DataType's");
static_assert(HORA_C_SUM == static_cast<int>(ReduceOp::kSum) &&
                  HORA_C_AVERAGE == static_cast<int>(ReduceOp::kAverage) &&
                  HORA_C_MIN == static_cast<int>(ReduceOp::kMin) &&
                  HORA_C_MAX == static_cast<int>(ReduceOp::kMax) &&
                  HORA_C_PRODUCT == static_cast<int>(ReduceOp::kProduct) &&
                  HORA_C_ADASUM == static_cast<int>(ReduceOp::kAdasum),
              "c_api.h's reduce op values must be hora::ReduceOp's");
static_assert(HORA_C_OK == static_cast<int>(StatusCode::kOk) &&
                  HORA_C_INVALID_ARGUMENT == static_cast<int>(StatusCode::kInvalidArgument) &&
                  HORA_C_FAILED_PRECONDITION == static_cast<int>(StatusCode::kFailedPrecondition) &&
                  HORA_C_MISMATCH == static_cast<int>(StatusCode::kMismatch) &&
                  HORA_C_TIMEOUT == static_cast<int>(StatusCode::kTimeout) &&
                  HORA_C_REMOTE == static_cast<int>(StatusCode::kRemote) &&
                  HORA_C_IO == static_cast<int>(StatusCode::kIo) &&
                  HORA_C_UNIMPLEMENTED == static_cast<int>(StatusCode::kUnimplemented) &&
                  HORA_C_INTERNAL == static_cast<int>(StatusCode::kInternal),
              "c_api.h's result codes must be hora::StatusCode's");

StatusOr<DataType> dtype_of(int32_t value) {
  if (value < HORA_C_UINT8 || value > HORA_C_BOOL)
    return Status::invalid_argument("hora C API: dtype value " + std::to_string(value) +
                                    " is not one of c_api.h's HORA_C_* dtypes");
  return static_cast<DataType>(value);
}

StatusOr<TensorView> view_of(const HoraTensor* t, const std::string& name, const char* what) {
  if (t == nullptr) return Status::invalid_argument("tensor '" + name + "': " + what + " is NULL");
  HORA_ASSIGN_OR_RETURN(DataType dtype, dtype_of(t->dtype));
  if (t->ndim < 0 || (t->ndim > 0 && t->shape == nullptr))
    return Status::invalid_argument("tensor '" + name + "': " + what + " has ndim " +
                                    std::to_string(t->ndim) + " and shape " +
                                    (t->shape ? "given" : "NULL"));
  std::vector<int64_t> shape(t->shape, t->shape + t->ndim);
  StatusOr<TensorView> view = TensorView::make(t->data, dtype, std::move(shape));
  if (!view.ok()) return view.status().with_context("tensor '" + name + "': " + what);
  return view;
}

void finish(HoraDoneFn done, void* ctx, const Status& s, int last_joined = -1,
            const std::vector<int64_t>* splits = nullptr) {
  const std::string message = s.ok() ? std::string() : s.message();
  HoraResult r{static_cast<int32_t>(s.code()), message.c_str(), last_joined, 0, nullptr};
  if (splits != nullptr) {
    r.splits_count = static_cast<int32_t>(splits->size());
    r.received_splits = splits->data();
  }
  done(ctx, &r);
}

// Completes `done` when `h` does (at once when it already has).
void finish_on_complete(const Handle& h, HoraDoneFn done, void* ctx) {
  h.on_complete([done, ctx](const Status& s) { finish(done, ctx, s); });
}

// The callback reads the results from its own copy of the handle: they are written before
// completion (Handle::last_joined, received_splits). The copy lives in the callback, which the
// handle drops once it ran, so it keeps the results alive exactly while they are read.
void finish_with_results_on_complete(const Handle& h, HoraDoneFn done, void* ctx) {
  h.on_complete([h, done, ctx](const Status& s) {
    const bool ok = s.ok() && h.valid();
    finish(done, ctx, s, ok ? h.last_joined() : -1, ok ? &h.received_splits() : nullptr);
  });
}

OutputAllocator c_allocator(HoraAllocFn alloc, void* alloc_ctx, std::string name) {
  return [alloc, alloc_ctx, name = std::move(name)](
             DataType dtype, const std::vector<int64_t>& shape) -> StatusOr<TensorView> {
    void* data = nullptr;
    char message[512] = {0};
    if (alloc(alloc_ctx, static_cast<int32_t>(dtype), static_cast<int32_t>(shape.size()),
              shape.data(), &data, message, sizeof(message)) != 0) {
      message[sizeof(message) - 1] = '\0';
      return Status::invalid_argument("tensor '" + name +
                                      "': the output allocator failed: " + message);
    }
    return TensorView::make(data, dtype, shape);
  };
}

#define HORA_C_TRY_VIEW(var, tensor, name, what)                        \
  StatusOr<TensorView> var##_or = view_of(tensor, name, what);          \
  if (!var##_or.ok()) return finish(done, done_ctx, var##_or.status()); \
  TensorView var = std::move(var##_or).value()

int32_t c_rank() { return hora::rank(); }
int32_t c_size() { return hora::size(); }

void c_allreduce(const char* name, const HoraTensor* in, const HoraTensor* out, int32_t op,
                 double prescale, double postscale, int32_t compression, int32_t process_set,
                 HoraDoneFn done, void* done_ctx) {
  const std::string n = name ? name : "";
  HORA_C_TRY_VIEW(vin, in, n, "input");
  HORA_C_TRY_VIEW(vout, out, n, "output");
  AllreduceOptions o;
  o.op = static_cast<ReduceOp>(op);
  o.prescale = prescale;
  o.postscale = postscale;
  o.compression = static_cast<Compression>(compression);
  o.process_set = process_set;
  finish_on_complete(hora::allreduce_async(n, vin, vout, o), done, done_ctx);
}

void c_grouped_allreduce(int32_t count, const char* const* names, const HoraTensor* ins,
                         const HoraTensor* outs, int32_t op, double prescale, double postscale,
                         int32_t compression, int32_t process_set, HoraDoneFn done,
                         void* done_ctx) {
  std::vector<std::string> ns;
  std::vector<TensorView> vins, vouts;
  for (int32_t i = 0; i < count; ++i) {
    ns.emplace_back(names && names[i] ? names[i] : "");
    HORA_C_TRY_VIEW(vin, &ins[i], ns.back(), "input");
    HORA_C_TRY_VIEW(vout, &outs[i], ns.back(), "output");
    vins.push_back(vin);
    vouts.push_back(vout);
  }
  AllreduceOptions o;
  o.op = static_cast<ReduceOp>(op);
  o.prescale = prescale;
  o.postscale = postscale;
  o.compression = static_cast<Compression>(compression);
  o.process_set = process_set;
  finish_on_complete(hora::grouped_allreduce_async(ns, vins, vouts, o), done, done_ctx);
}

void c_allgather(const char* name, const HoraTensor* in, HoraAllocFn alloc, void* alloc_ctx,
                 int32_t process_set, HoraDoneFn done, void* done_ctx) {
  const std::string n = name ? name : "";
  HORA_C_TRY_VIEW(vin, in, n, "input");
  finish_on_complete(hora::allgather_async(n, vin, c_allocator(alloc, alloc_ctx, n), process_set),
                     done, done_ctx);
}

void c_broadcast(const char* name, const HoraTensor* tensor, int32_t root, int32_t process_set,
                 HoraDoneFn done, void* done_ctx) {
  const std::string n = name ? name : "";
  HORA_C_TRY_VIEW(v, tensor, n, "tensor");
  finish_on_complete(hora::broadcast_async(n, v, root, process_set), done, done_ctx);
}

void c_alltoall(const char* name, const HoraTensor* in, const int64_t* splits, int32_t splits_count,
                HoraAllocFn alloc, void* alloc_ctx, int32_t process_set, HoraDoneFn done,
                void* done_ctx) {
  const std::string n = name ? name : "";
  HORA_C_TRY_VIEW(vin, in, n, "input");
  std::vector<int64_t> s;
  if (splits != nullptr && splits_count > 0) s.assign(splits, splits + splits_count);
  finish_with_results_on_complete(
      hora::alltoall_async(n, vin, s, c_allocator(alloc, alloc_ctx, n), process_set), done,
      done_ctx);
}

void c_reducescatter(const char* name, const HoraTensor* in, int32_t op, double prescale,
                     double postscale, HoraAllocFn alloc, void* alloc_ctx, int32_t process_set,
                     HoraDoneFn done, void* done_ctx) {
  const std::string n = name ? name : "";
  HORA_C_TRY_VIEW(vin, in, n, "input");
  finish_on_complete(
      hora::reducescatter_async(n, vin, static_cast<ReduceOp>(op), prescale, postscale,
                                c_allocator(alloc, alloc_ctx, n), process_set),
      done, done_ctx);
}

void c_barrier(int32_t process_set, HoraDoneFn done, void* done_ctx) {
  finish_on_complete(hora::barrier_async(process_set), done, done_ctx);
}

void c_join(int32_t process_set, HoraDoneFn done, void* done_ctx) {
  finish_with_results_on_complete(hora::join_async(process_set), done, done_ctx);
}

#undef HORA_C_TRY_VIEW

int32_t c_reducer_gradient_ready(int64_t reducer_id, int32_t index, const HoraTensor* grad,
                                 char* message, int32_t message_bytes) {
  Status s = [&]() -> Status {
    HORA_ASSIGN_OR_RETURN(std::shared_ptr<GradientReducer> reducer,
                          c_api_reducers().find(reducer_id));
    if (index < 0 || static_cast<size_t>(index) >= reducer->parameter_count())
      return Status::invalid_argument("gradient reducer " + std::to_string(reducer_id) +
                                      ": parameter index " + std::to_string(index) +
                                      " is out of range (" +
                                      std::to_string(reducer->parameter_count()) + " parameters)");
    const std::string name = reducer->options().name_prefix + reducer->name(index);
    HORA_ASSIGN_OR_RETURN(TensorView view, view_of(grad, name, "gradient"));
    return reducer->gradient_ready(static_cast<size_t>(index), view);
  }();
  if (s.ok()) return 0;
  if (message != nullptr && message_bytes > 0) {
    const std::string& text = s.message();
    const size_t n = std::min(text.size(), static_cast<size_t>(message_bytes - 1));
    std::memcpy(message, text.data(), n);
    message[n] = '\0';
  }
  return static_cast<int32_t>(s.code());
}

void c_reducer_synchronize(int64_t reducer_id, HoraDoneFn done, void* done_ctx) {
  StatusOr<std::shared_ptr<GradientReducer>> reducer = c_api_reducers().find(reducer_id);
  if (!reducer.ok()) return finish(done, done_ctx, reducer.status());
  c_api_reducers().synchronize_later(
      std::move(reducer).value(), [done, done_ctx](const Status& s) { finish(done, done_ctx, s); });
}

const HoraCApi kTable = {
    HORA_C_API_VERSION,
    sizeof(HoraCApi),
    &c_rank,
    &c_size,
    &c_allreduce,
    &c_grouped_allreduce,
    &c_allgather,
    &c_broadcast,
    &c_alltoall,
    &c_reducescatter,
    &c_barrier,
    &c_join,
    &c_reducer_gradient_ready,
    &c_reducer_synchronize,
};

}  // namespace

void bind_c_api(py::module_& m) {
  m.def(
      "c_api_address", [] { return reinterpret_cast<uintptr_t>(&kTable); },
      "The address of this module's HoraCApi table (adapters/python/c_api.h), for native op "
      "libraries to reach this process's one engine.");
  m.def("c_api_version", [] { return HORA_C_API_VERSION; });
  m.def(
      "c_api_reducer_create",
      [](std::vector<std::string> names, ReduceOp op, Compression compression,
         double gradient_predivide_factor, std::string name_prefix,
         std::vector<std::vector<size_t>> groups, int process_set) {
        GradientReducerOptions o;
        o.op = op;
        o.compression = compression;
        o.gradient_predivide_factor = gradient_predivide_factor;
        o.name_prefix = std::move(name_prefix);
        o.groups = std::move(groups);
        o.process_set = process_set;
        return check(c_api_reducers().create(std::move(names), std::move(o)));
      },
      py::arg("names"), py::arg("op"), py::arg("compression"), py::arg("gradient_predivide_factor"),
      py::arg("name_prefix"), py::arg("groups"), py::arg("process_set") = 0,
      "Makes a GradientReducer that native ops drive through the C API "
      "(reducer_gradient_ready / reducer_synchronize) and returns its id; it reduces over "
      "the ranks of process set `process_set` (0: every rank).");
  m.def(
      "c_api_reducer_release",
      [](int64_t id) {
        // Dropping the last reference waits for collectives still in flight.
        py::gil_scoped_release release;
        c_api_reducers().release(id);
      },
      py::arg("id"), "Forgets reducer `id`; ops still running keep it alive until they end.");
}

}  // namespace python
}  // namespace hora
