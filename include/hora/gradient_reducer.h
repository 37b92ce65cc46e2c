// GradientReducer: the framework-neutral bookkeeping of data-parallel gradient averaging,
// shared by every adapter (the C++ DistributedOptimizer, hora.torch, hora.tensorflow/keras).
//
// An adapter creates one reducer over the model's parameters (unique names, the same on every
// rank, in the same order) and reports, from its backward hooks, that a parameter's gradient
// is complete for this backward pass. The reducer counts passes per parameter; on the k-th
// pass (k = backward_passes_per_step) it enqueues that gradient's allreduce at once (or, for a
// parameter in a group, the group's grouped allreduce once every member is ready), so
// communication overlaps the rest of backward. synchronize() enqueues what was not (unused
// parameters, through the views the adapter hands to flush()) and waits for every handle.
//
//   auto reducer = GradientReducer::create(names, options).value();
//   // backward hooks, any thread:
//   reducer->gradient_ready(index, grad_view);
//   // before the optimizer's step:
//   for (size_t i : reducer->unreported()) reducer->flush(i, grad_view_of(i));
//   Status s = reducer->synchronize();
//
// Names on the wire are name_prefix + name. Scaling: with op kAverage the engine averages;
// gradient_predivide_factor f splits it (prescale 1/f before the sum, postscale f/size after,
// Horovod's split that keeps float16 sums in range); average_aggregated_gradients divides by
// backward_passes_per_step too. Compression is a request option (hora/hora.h): the engine
// casts while packing, so the adapter's buffers stay float32.
//
// Errors: misuse is kFailedPrecondition / kInvalidArgument naming the parameter (a pass past
// backward_passes_per_step before a synchronize, an unknown index, a dtype that compression
// does not apply to), returned by the call that made it (the step goes on without that
// report). The first error of the step's allreduces (a mismatch, a failed peer, an enqueue
// refused) is kept and returned by synchronize(), after every handle of the step completed,
// so buffers are never left in the engine's hands.
//
// Threads: gradient_ready and flush are safe from any thread concurrently (autograd runs
// hooks on several threads); one mutex guards the slots, never held while waiting.
// synchronize and unreported from one thread (the training thread), not concurrently with a
// backward pass. Buffers handed in must stay valid and untouched until synchronize
// returned.
#pragma once

#include <chrono>
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "hora/compression.h"
#include "hora/hora.h"
#include "hora/mutex.h"
#include "hora/reduce_op.h"
#include "hora/status.h"
#include "hora/tensor_view.h"
#include "hora/thread_annotations.h"

namespace hora {

struct GradientReducerOptions {
  // kAverage or kSum.
  ReduceOp op = ReduceOp::kAverage;
  // Gradients travel as float16 / bfloat16 (the engine casts while packing and back while
  // unpacking; hora/compression.h).
  Compression compression = Compression::kNone;
  // Local accumulation: only every k-th backward pass reduces; the gradients of the k passes
  // accumulate in the model's buffers in between.
  int backward_passes_per_step = 1;
  // Divide the accumulated gradients by backward_passes_per_step as well (Horovod's
  // TensorFlow option of the same name; PyTorch's Horovod leaves that to the loss scale).
  bool average_aggregated_gradients = false;
  // Average only: prescale by 1/f before the sum, postscale by f/size after (Horovod's split
  // of the average, which keeps large sums of float16 in range).
  double gradient_predivide_factor = 1.0;
  // false: gradient_ready only counts; every allreduce is enqueued in synchronize() (the
  // "reduce after backward" variant, for comparison).
  bool overlap_backward = true;
  // Prefix of the allreduce names ("grad/fc1.weight").
  std::string name_prefix = "grad/";
  // Parameter indices reduced together as one grouped allreduce (Horovod's groups); a
  // parameter in no group is reduced alone. Each index at most once.
  std::vector<std::vector<size_t>> groups;
  // The process set whose ranks average the gradients (hora/process_set.h; 0: every rank):
  // a data-parallel group of a hybrid job. Only its members may use the reducer.
  int process_set = 0;
};

class GradientReducer {
 public:
  // Fails with kInvalidArgument on an empty or duplicate name, op other than average/sum/adasum
  // (adasum: the gradients combined by Adasum, as Horovod's Keras optimizer does),
  // backward_passes_per_step < 1, gradient_predivide_factor <= 0 (or != 1 with sum), a group
  // index out of range or repeated. Does not need hora::init (enqueueing does).
  static StatusOr<std::unique_ptr<GradientReducer>> create(std::vector<std::string> names,
                                                           GradientReducerOptions options);
  // Waits for whatever is still in flight (buffers must not disappear under the engine).
  ~GradientReducer();
  GradientReducer(const GradientReducer&) = delete;
  GradientReducer& operator=(const GradientReducer&) = delete;

  size_t parameter_count() const { return names_.size(); }
  const std::string& name(size_t index) const { return names_[index]; }
  // The index of `name`, or kInvalidArgument naming it.
  StatusOr<size_t> index_of(const std::string& name) const;
  const GradientReducerOptions& options() const { return options_; }

  // Gradient `index` is complete for this backward pass; `grad` is where it lies now (it may
  // move between steps, e.g. a framework that frees gradients on zero_grad). On the k-th pass
  // enqueues the allreduce in place (or the group's, when its last member becomes ready).
  // Returns at once.
  Status gradient_ready(size_t index, const TensorView& grad);
  Status gradient_ready(const std::string& name, const TensorView& grad);

  // Parameters whose allreduce is not enqueued yet in this step, in index order.
  std::vector<size_t> unreported() const;
  // Enqueues parameter `index` now, whatever its pass count (an unused parameter: the adapter
  // hands a zero gradient or what accumulated). No-op when it is already enqueued.
  Status flush(size_t index, const TensorView& grad);

  // Enqueues every parameter that gradient_ready saw but did not enqueue (passes < k, or
  // overlap_backward off), then waits for every handle of the step: afterwards each gradient
  // buffer holds the reduced gradient, and the step's state is reset. Parameters never seen
  // this step and never flushed stay out (the adapter flushes them first when every rank
  // must run the same collectives). Returns the step's first error.
  // Without a timeout waits HORA_TIMEOUT_S per handle. With one it returns kTimeout when the
  // handles are not all complete in time and keeps them pending (call again; a caller that
  // polls for Ctrl-C waits in slices this way).
  Status synchronize();
  Status synchronize(std::chrono::milliseconds timeout);

  // True while a backward pass was counted or an allreduce is in flight since the last
  // synchronize (zero_grad then would clear gradients the engine is reducing).
  bool has_pending() const;

 private:
  struct Slot;
  struct InFlight;
  GradientReducer(std::vector<std::string> names, GradientReducerOptions options);
  Status check_gradient(size_t index, const TensorView& grad) const;
  // Marks `index` ready; enqueues it, or its group once every member is ready.
  Status ready_locked(size_t index) HORA_REQUIRES(mu_);
  // The allreduce of parameter `index`, in no group (allocates nothing of its own).
  Status enqueue_one_locked(size_t index) HORA_REQUIRES(mu_);
  // One grouped allreduce over `members` of a group.
  Status enqueue_group_locked(const std::vector<size_t>& members) HORA_REQUIRES(mu_);
  // Records `h` as in flight over `index` (`members` empty) or `members`, and reports an
  // enqueue the engine refused at once.
  Status track_locked(Handle h, size_t index, std::vector<size_t> members) HORA_REQUIRES(mu_);
  // Enqueues what gradient_ready saw or flush() marked but nothing enqueued yet.
  void enqueue_leftovers_locked() HORA_REQUIRES(mu_);
  // Takes the completed handles out of in_flight_, keeping the first error.
  void retire_completed_locked() HORA_REQUIRES(mu_);
  Status wait_step(const std::chrono::milliseconds* timeout);

  const std::vector<std::string> names_;
  const GradientReducerOptions options_;
  // name_prefix + name of each parameter, made once: the allreduces' names.
  std::vector<std::string> wire_names_;
  std::vector<std::pair<std::string, size_t>> index_;  // name -> index, sorted by name
  std::vector<int> group_of_;  // parameter -> index into options_.groups, or -1
  double prescale_ = 1.0;      // from op, gradient_predivide_factor, aggregation
  double postscale_ = 1.0;
  // Guards slots_, in_flight_ and first_error_. Held while enqueueing (a short critical
  // section of the engine's queue), never while waiting on a handle.
  mutable Mutex mu_;
  std::vector<Slot> slots_ HORA_GUARDED_BY(mu_);
  std::vector<InFlight> in_flight_ HORA_GUARDED_BY(mu_);
  Status first_error_ HORA_GUARDED_BY(mu_);  // the step's first failed allreduce
};

}  // namespace hora
