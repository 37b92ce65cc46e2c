// Engine: the background thread's loop, and the front door the API (core/api.cc) enqueues to.
//
// Loop: sleep until a request arrives (then collect more to fuse, for at most
// HORA_CYCLE_TIME_MS, ending early once no new request came for 50 us or as soon as a caller
// waits on a handle whose request is still queued), or until the idle heartbeat
// (HORA_HEARTBEAT_MS); then run one negotiation round (Controller) and execute what it agreed
// (Executor). While this rank has requests not yet agreed, the next round follows at once
// when the last one agreed something, else after one cycle time or the next request. At one
// rank there is no burst window. No busy polling: an idle engine runs one small round per
// heartbeat.
//
// Helping callers: a thread that waits on an incomplete handle runs rounds itself
// (help()) while it can take the run token and each round agrees something, until its handle
// is done. The background thread stands aside while a caller helps (it sleeps until the helper
// leaves work to it, new requests arrive, or the heartbeat) instead of queueing on the run
// token: woken by the wait when the burst is large (256 KiB or more), else when its burst
// window ends. Rounds are the same collective sequence on every rank whichever
// thread runs them, so ranks may mix the two freely. A caller never helps while a pause or
// the shutdown is asked (those rounds are the loop's), nor from inside a completion callback
// run by a round (the token is not reentrant). Steps whose ranks are ready together thus
// complete on the waiting threads, with no thread woken.
//
// Liveness: hora::init starts the thread, so from init on every rank takes part in a round at
// least every heartbeat. A rank that is slow to reach a collective (loading data, compiling a
// model) keeps answering rounds and is waited for; a rank that stopped answering (killed,
// SIGSTOPped, exited) makes the others' current round or collective fail at its deadline,
// HORA_TIMEOUT_S after it began, naming that rank.
//
// Pause: hora's own tests and benchmarks that drive the job's Communicator themselves park
// the engine first (pause(), core/context_access.h). Parking is agreed in a round, like
// shutdown, so every rank parks after the same round and no round is left half-run; a parked
// engine does not touch the communicator until resume() or stop().
//
// Stop: stop() asks for the shutdown round; every rank leaves its loop after the round in which
// any rank asked. Handles still pending then fail (kFailedPrecondition naming the tensor and
// the rank that shut down); a communication failure or a fatal stall fails every pending
// handle with that error and closes the queue, so later enqueues fail at once with it.
//
// Threads: enqueue, pause, resume, stop and stats from any thread; the communicator, the
// controller and the executors only from the thread holding the run token (run_mu_: the
// background thread or a helping caller), and from the pausing caller's thread while parked.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/rendezvous/failure_board.h"
#include "core/engine/autotuner.h"
#include "core/engine/controller.h"
#include "core/engine/device_executor.h"
#include "core/engine/engine_options.h"
#include "core/engine/executor.h"
#include "core/engine/tensor_queue.h"
#include "core/engine/timeline.h"
#include "hora/mutex.h"
#include "hora/status.h"
#include "hora/thread_annotations.h"
#include "hora/types.h"

namespace hora {
namespace engine {

class Engine final : public detail::WaitSignal {
 public:
  // `store` (may be null) carries the failure board under `store_prefix`. `topology` (may be
  // null: one host assumed; borrowed, must outlive the engine) gives the hierarchical
  // collectives and the selector the hosts and links, as options' HORA_HIERARCHICAL_* allow.
  // Does not start the thread (start() or the first enqueue does).
  // `device` (may be null: no GPU path; borrowed, must outlive the engine) is what the job has
  // for tensors in GPU memory (DeviceExecutor).
  Engine(collectives::Communicator& comm, const EngineOptions& options, collectives::Store* store,
         const std::string& store_prefix, const collectives::Topology* topology = nullptr,
         const DeviceResources* device = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Starts the background thread (and opens the timeline on rank 0). Idempotent.
  void start();
  // Adds the entries atomically and returns one handle for all of them (group) or fails.
  // Starts the background thread if start() was not called. The entries are moved from (on
  // failure some may be); the caller may clear the vector and reuse its capacity (core/api.cc
  // keeps one per thread).
  Status enqueue(std::vector<Entry>&& entries);
  // One allreduce of tensors in host memory (REQUIRES: spec.in and spec.out on the CPU), its
  // entry filled in place in the queue (TensorQueue::enqueue_allreduce): the same as enqueue()
  // of the entry core/api.cc would build, with no Entry built and moved per call.
  Status enqueue_allreduce(AllreduceSpec&& spec);
  // Collective: every rank calls it. Blocks until this rank's engine parked after the round in
  // which every rank asked (the same round everywhere), then returns OK: the caller's thread
  // may use the communicator until resume(). Fails with kTimeout when not every rank asked
  // within `timeout` (this rank then no longer asks), or with the engine's error when it has
  // stopped. Collectives enqueued meanwhile wait until resume.
  Status pause(std::chrono::milliseconds timeout);
  // Lets this rank's engine run rounds again; they complete once every rank resumed. No-op
  // when not paused.
  void resume();
  // Runs the shutdown round (resuming a parked engine first) and joins the thread.
  // Idempotent. Returns the engine's fatal error if it had one.
  Status stop();

  // What handles of this engine tell when a thread waits on them (ends the burst window,
  // then helps).
  detail::WaitSignal* wait_signal() { return this; }
  // WaitSignal: ends the burst; true when the thread may help (not stopped, not paused, not
  // inside a round on this thread, HORA_WAITERS_HELP not 0).
  bool waiting() override;
  // WaitSignal: runs rounds on this thread while the token is free and each agrees something,
  // until `state` is done; wakes the background thread when work is left to it.
  void help(const detail::HandleState& state) override;

  int size() const { return comm_.size(); }
  int rank() const { return comm_.rank(); }
  double timeout_s() const { return options_.timeout_s; }
  // When an allreduce is enqueued, if that time is used: the timeline's NEGOTIATE phase
  // starts there (rank 0, HORA_TIMELINE set). Otherwise a zero time point, so the per-tensor
  // enqueue path reads no clock (about 15 ns a tensor).
  Clock::time_point enqueue_stamp() const {
    return stamp_enqueues_.load(std::memory_order_relaxed) ? Clock::now() : Clock::time_point{};
  }
  // hora::start_timeline / stop_timeline: rank 0 (re)opens its timeline at `path` (closing
  // the one being written) or closes it; other ranks write none and return OK. Any thread.
  // Fails when rank 0 cannot create the file (the timeline is then off).
  Status start_timeline(const std::string& path, bool mark_cycles);
  void stop_timeline();
  EngineStats stats() const;
  // Tests: the executor's allreduce tuner (its decided() from any thread; its skew hook
  // before the first allreduce is enqueued).
  AlgorithmTuner& algorithm_tuner_for_test() { return executor_->tuner(); }
  // HORA_AUTOTUNE=1's search and the values in force (any thread).
  AutotuneState autotune_state() const { return autotuner_->state(); }

 private:
  void start_locked() HORA_REQUIRES(mu_);
  Status ended_status() const HORA_REQUIRES(mu_);
  bool pause_asked() const HORA_EXCLUDES(mu_);
  // The autotuner over the options (HORA_AUTOTUNE=1) and the executor's effective settings.
  std::unique_ptr<Autotuner> make_autotuner(const EngineOptions& options,
                                            const ExecutorOptions& eo);
  void loop();
  // Sleeps until the next round may be due (see the loop above). Returns true when one is
  // due whatever the queue holds (a wake-up, shutdown, or the heartbeat).
  bool wait_for_round();
  // Whether the last bursts were each taken by a helping caller (wait_for_round).
  bool predicting_help() const;
  // Whether a caller is inside help() (from waiting() on) now.
  bool helper_active() const HORA_EXCLUDES(mu_);
  // With the token: whether a round is due (new requests, requests not yet agreed, the
  // heartbeat since the last round by any thread, a pause or shutdown asked).
  bool round_due() HORA_REQUIRES(run_mu_);
  // With the token: one round and the execution of what it agreed, from the loop or a helping
  // caller (`helping`: asks neither pause nor shutdown). Returns false when the engine ended
  // (shutdown or failure; handles failed, ended_ set).
  bool step(bool helping) HORA_REQUIRES(run_mu_);
  // Parks until resume() or stop(). Background thread.
  void park();
  void fail_all(const Status& why);
  // A helping caller left help().
  void end_help() HORA_EXCLUDES(mu_);
  // The loop ended: records why and wakes pause() callers.
  void finish(const Status& fatal);

  collectives::Communicator& comm_;
  const EngineOptions options_;
  TensorQueue queue_;
  Timeline timeline_;
  collectives::FailureBoard board_;
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<DeviceExecutor> device_executor_;  // before executor_, which borrows it
  std::unique_ptr<Executor> executor_;

  // The run token: held by whichever thread runs a round (never with mu_ held inside it:
  // a round's callbacks may enqueue). Not reentrant: t_in_round (engine.cc) keeps a thread
  // that runs a round from helping again.
  Mutex run_mu_ HORA_ACQUIRED_BEFORE(mu_);
  bool asked_shutdown_ HORA_GUARDED_BY(run_mu_) = false;   // a round asked it
  bool ended_ HORA_GUARDED_BY(run_mu_) = false;            // a round ended the engine
  bool park_due_ HORA_GUARDED_BY(run_mu_) = false;         // a round agreed to pause
  Status run_fatal_ HORA_GUARDED_BY(run_mu_);              // why a round ended it, if failed
  Clock::time_point last_round_ HORA_GUARDED_BY(run_mu_);  // when the last round ended
  // The round's fresh requests, swapped with the queue's each round (capacity kept).
  std::vector<Request*> taken_ HORA_GUARDED_BY(run_mu_);
  // Written with the token, read by the background thread's sleep without it.
  std::atomic<bool> last_round_progressed_{false};  // the last round agreed something
  std::atomic<bool> pending_{false};                // requests here not agreed yet
  // Bursts in a row whose round a helping caller ran (capped at kPredictHelpAfter): written by
  // the background thread, read by waiting() on any thread.
  // The burst window (options_.cycle_time_ms until the autotuner sets it).
  std::atomic<double> cycle_time_ms_;
  std::unique_ptr<Autotuner> autotuner_;
  std::atomic<int> helped_bursts_{0};
  const bool help_enabled_;  // HORA_WAITERS_HELP (options), default on
  // Rank 0 with a timeline open: enqueue_stamp() reads the clock.
  std::atomic<bool> stamp_enqueues_;

  // mu_ guards the fields below it; never held while the loop runs a round, taken before
  // the queue's mutex when both are (enqueue takes them one after the other, never nested).
  mutable Mutex mu_;
  CondVar cv_;  // parked_, pause_asked_, loop_ended_ changes
  // Started under mu_ (start_locked) and joined by stop() once stopped_ keeps it from being
  // started again, so stop() joins it without the lock.
  std::thread thread_;
  bool started_ HORA_GUARDED_BY(mu_) = false;
  bool stopped_ HORA_GUARDED_BY(mu_) = false;  // stop() called
  // started_ && !stopped_, written under mu_: enqueue_allreduce reads it without the lock.
  // (Taking mu_ would not close the window in which stop() runs between the check and the
  // queue's insert either: the queue refuses once closed, and closing it fails what it holds.)
  std::atomic<bool> accepting_{false};
  bool pause_asked_ HORA_GUARDED_BY(mu_) = false;  // pause() waits for every rank to ask
  bool parked_ HORA_GUARDED_BY(mu_) = false;       // the loop sits in park()
  bool loop_ended_ HORA_GUARDED_BY(mu_) = false;   // the loop returned (shutdown or failure)
  int helpers_ HORA_GUARDED_BY(mu_) = 0;           // callers inside help(); stop() waits
  Status fatal_ HORA_GUARDED_BY(mu_);              // why the loop ended when it failed
};

}  // namespace engine
}  // namespace hora
