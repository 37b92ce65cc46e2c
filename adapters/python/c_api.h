/* hora's C ABI for native op libraries: how a framework's compiled ops (hora.tensorflow's
 * custom TensorFlow ops, adapters/tensorflow/) reach the ONE engine of the process, the one
 * inside hora._core.
 *
 * Why a table of C function pointers: an op library built against a framework's headers
 * cannot link hora's engine itself (the process would then hold two engines, two
 * communicators and two sets of ranks), and Python loads extension modules with RTLD_LOCAL,
 * so it cannot resolve hora._core's symbols either. hora._core therefore fills one static
 * HoraCApi and hands its address to Python (hora._core.c_api_address()); the framework
 * adapter passes that address to the op library's exported registration function
 * (hora_tf_connect for TensorFlow) before any op runs. Only C types cross the boundary, so
 * the two libraries need not agree on C++ ABI details.
 *
 * Contract of every collective entry: it never blocks; it calls `done(done_ctx, result)`
 * exactly once, either on the calling thread before returning (an error found at enqueue)
 * or later on hora's engine thread. `result` and its strings are valid only during the
 * call; `done` must be short and must not wait on hora (it runs on the engine thread).
 * Buffers belong to the caller and must stay valid and untouched until `done` ran.
 * Names: empty means unnamed (numbered in call order, which must then match across ranks).
 * Process sets (version 3): every collective takes `process_set`, the id of the set it runs on
 * (0: the global set; hora/process_set.h); root ranks stay global ranks, results are the
 * set's, and a rank outside the set completes at once with HORA_C_INVALID_ARGUMENT.
 *
 * Threads: every entry may be called from any thread once hora.init() returned; before
 * init (or after shutdown) each completes at once with HORA_C_FAILED_PRECONDITION.
 */
#ifndef HORA_ADAPTERS_PYTHON_C_API_H_
#define HORA_ADAPTERS_PYTHON_C_API_H_

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped whenever HoraCApi changes; an op library refuses a table of another version. */
#define HORA_C_API_VERSION 3

/* Element types: the values of hora::DataType (hora/data_type.h). */
enum {
  HORA_C_UINT8 = 0,
  HORA_C_INT8 = 1,
  HORA_C_INT32 = 2,
  HORA_C_INT64 = 3,
  HORA_C_FLOAT16 = 4,
  HORA_C_BFLOAT16 = 5,
  HORA_C_FLOAT32 = 6,
  HORA_C_FLOAT64 = 7,
  HORA_C_INT16 = 8,
  HORA_C_UINT16 = 9,
  HORA_C_BOOL = 10
};

/* Reduce ops (hora::ReduceOp) and compressions (hora::Compression). */
enum {
  HORA_C_SUM = 0,
  HORA_C_AVERAGE = 1,
  HORA_C_MIN = 2,
  HORA_C_MAX = 3,
  HORA_C_PRODUCT = 4,
  HORA_C_ADASUM = 5
};
enum { HORA_C_COMPRESSION_NONE = 0, HORA_C_COMPRESSION_FP16 = 1, HORA_C_COMPRESSION_BF16 = 2 };

/* Result codes: the values of hora::StatusCode (0 is OK). */
enum {
  HORA_C_OK = 0,
  HORA_C_INVALID_ARGUMENT = 1,
  HORA_C_FAILED_PRECONDITION = 2,
  HORA_C_MISMATCH = 3,
  HORA_C_TIMEOUT = 4,
  HORA_C_REMOTE = 5,
  HORA_C_IO = 6,
  HORA_C_UNIMPLEMENTED = 7,
  HORA_C_INTERNAL = 8
};

/* A contiguous row-major CPU tensor. `shape` has `ndim` entries and must stay valid for the
 * duration of the call that receives it (hora copies it). */
typedef struct HoraTensor {
  void* data;
  int32_t dtype;
  int32_t ndim;
  const int64_t* shape;
} HoraTensor;

/* What a collective ended with. `code` is a hora::StatusCode (HORA_C_OK on success) and
 * `message` the full error text ("" when OK). `last_joined` is set for join (else -1);
 * `received_splits` (count `splits_count`) for alltoall (else 0 and NULL). */
typedef struct HoraResult {
  int32_t code;
  const char* message;
  int32_t last_joined;
  int32_t splits_count;
  const int64_t* received_splits;
} HoraResult;

typedef void (*HoraDoneFn)(void* ctx, const HoraResult* result);

/* Makes the output of allgather, alltoall or reducescatter once its shape is known, on the
 * engine thread: returns 0 and sets *data to memory of `dtype` and that shape (contiguous,
 * valid until the collective's done ran), or returns non-zero and writes a NUL-terminated
 * reason into `message` (at most `message_bytes` bytes); the collective then fails with it
 * on this rank (the other ranks are not held up). */
typedef int32_t (*HoraAllocFn)(void* ctx, int32_t dtype, int32_t ndim, const int64_t* shape,
                               void** data, char* message, int32_t message_bytes);

typedef struct HoraCApi {
  uint32_t version;      /* HORA_C_API_VERSION */
  uint32_t struct_bytes; /* sizeof(HoraCApi) */

  /* The job's layout; -1 when hora is not initialised. */
  int32_t (*rank)(void);
  int32_t (*size)(void);

  /* out = postscale * op_over_ranks(prescale * in); out may equal in (in place). */
  void (*allreduce)(const char* name, const HoraTensor* in, const HoraTensor* out, int32_t op,
                    double prescale, double postscale, int32_t compression, int32_t process_set,
                    HoraDoneFn done, void* done_ctx);
  /* `count` allreduces enqueued atomically and fused as a unit; one done for the group. */
  void (*grouped_allreduce)(int32_t count, const char* const* names, const HoraTensor* ins,
                            const HoraTensor* outs, int32_t op, double prescale, double postscale,
                            int32_t compression, int32_t process_set, HoraDoneFn done,
                            void* done_ctx);
  /* Concatenation of every rank's `in` along the first dimension, into alloc's memory. */
  void (*allgather)(const char* name, const HoraTensor* in, HoraAllocFn alloc, void* alloc_ctx,
                    int32_t process_set, HoraDoneFn done, void* done_ctx);
  /* Root's `tensor` into every rank's `tensor`, in place. */
  void (*broadcast)(const char* name, const HoraTensor* tensor, int32_t root, int32_t process_set,
                    HoraDoneFn done, void* done_ctx);
  /* splits[p] first-dimension rows go to rank p (splits_count 0: an even split); the
   * received splits come back in the result. */
  void (*alltoall)(const char* name, const HoraTensor* in, const int64_t* splits,
                   int32_t splits_count, HoraAllocFn alloc, void* alloc_ctx, int32_t process_set,
                   HoraDoneFn done, void* done_ctx);
  /* This rank's block of postscale * op_over_ranks(prescale * in) along the first
   * dimension (version 2 added the scale factors). */
  void (*reducescatter)(const char* name, const HoraTensor* in, int32_t op, double prescale,
                        double postscale, HoraAllocFn alloc, void* alloc_ctx, int32_t process_set,
                        HoraDoneFn done, void* done_ctx);
  /* Completes once every rank called barrier (no deadline of its own: a dead peer fails it). */
  void (*barrier)(int32_t process_set, HoraDoneFn done, void* done_ctx);
  /* This rank has no more data; result.last_joined once every rank joined. */
  void (*join)(int32_t process_set, HoraDoneFn done, void* done_ctx);

  /* Gradient reducers (hora/gradient_reducer.h) made by hora._core.c_api_reducer_create.
   * gradient_ready: parameter `index`'s gradient lies in `grad` (which the reducer reduces
   * in place; keep it untouched until the reducer's synchronize completed). Returns 0, or
   * non-zero with the reason in `message` (an unknown reducer id, a misuse the reducer
   * refuses). synchronize: enqueues what is left and completes `done` once every allreduce
   * of the step completed (the waiting happens on a thread of hora._core, never the
   * caller's), with the step's first error. */
  int32_t (*reducer_gradient_ready)(int64_t reducer_id, int32_t index, const HoraTensor* grad,
                                    char* message, int32_t message_bytes);
  void (*reducer_synchronize)(int64_t reducer_id, HoraDoneFn done, void* done_ctx);
} HoraCApi;

#ifdef __cplusplus
}  // extern "C"
#endif

#endif  // HORA_ADAPTERS_PYTHON_C_API_H_
