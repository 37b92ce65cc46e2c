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
// Threads: enqueue, pause, resume, stop and stats from any thread; the communicator only from
// the background thread, and from the pausing caller's thread while parked.
#pragma once

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/rendezvous/failure_board.h"
#include "core/base/mutex.h"
#include "core/base/status.h"
#include "core/base/thread_annotations.h"
#include "core/config.h"
#include "core/engine/controller.h"
#include "core/engine/device_executor.h"
#include "core/engine/executor.h"
#include "core/engine/tensor_queue.h"
#include "core/engine/timeline.h"
#include "core/hora.h"

namespace hora {
namespace engine {

class Engine {
 public:
  // `store` (may be null) carries the failure board under `store_prefix`. `topology` (may be
  // null: one host assumed; borrowed, must outlive the engine) gives the hierarchical
  // collectives and the selector the hosts and links, as config's HORA_HIERARCHICAL_* allow.
  // Does not start the thread (start() or the first enqueue does).
  // `device` (may be null: no GPU path; borrowed, must outlive the engine) is what the job has
  // for tensors in GPU memory (DeviceExecutor).
  Engine(collectives::Communicator& comm, const Config& config, collectives::Store* store,
         const std::string& store_prefix, const collectives::Topology* topology = nullptr,
         const DeviceResources* device = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Starts the background thread (and opens the timeline on rank 0). Idempotent.
  void start();
  // Adds the entries atomically and returns one handle for all of them (group) or fails.
  // Starts the background thread if start() was not called.
  Status enqueue(std::vector<Entry> entries);
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

  // What handles of this engine tell when a thread waits on them (ends the burst window).
  detail::WaitSignal* wait_signal() { return &queue_; }

  int size() const { return comm_.size(); }
  int rank() const { return comm_.rank(); }
  double timeout_s() const { return config_.timeout_s; }
  EngineStats stats() const;

 private:
  void start_locked() HORA_REQUIRES(mu_);
  Status ended_status() const HORA_REQUIRES(mu_);
  bool pause_asked() const HORA_EXCLUDES(mu_);
  void loop();
  // Sleeps until the next round is due (see the loop above).
  void wait_for_round();
  // Parks until resume() or stop(). Background thread.
  void park();
  void fail_all(const Status& why);
  // The loop ended: records why and wakes pause() callers.
  void finish(const Status& fatal);

  collectives::Communicator& comm_;
  const Config config_;
  TensorQueue queue_;
  Timeline timeline_;
  collectives::FailureBoard board_;
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<DeviceExecutor> device_executor_;  // before executor_, which borrows it
  std::unique_ptr<Executor> executor_;
  bool last_round_progressed_ = false;  // background thread: the last round agreed something

  // mu_ guards the fields below it; never held while the loop runs a round, taken before
  // the queue's mutex when both are (enqueue takes them one after the other, never nested).
  mutable Mutex mu_;
  CondVar cv_;  // parked_, pause_asked_, loop_ended_ changes
  // Started under mu_ (start_locked) and joined by stop() once stopped_ keeps it from being
  // started again, so stop() joins it without the lock.
  std::thread thread_;
  bool started_ HORA_GUARDED_BY(mu_) = false;
  bool stopped_ HORA_GUARDED_BY(mu_) = false;      // stop() called
  bool pause_asked_ HORA_GUARDED_BY(mu_) = false;  // pause() waits for every rank to ask
  bool parked_ HORA_GUARDED_BY(mu_) = false;       // the loop sits in park()
  bool loop_ended_ HORA_GUARDED_BY(mu_) = false;   // the loop returned (shutdown or failure)
  Status fatal_ HORA_GUARDED_BY(mu_);              // why the loop ended when it failed
};

}  // namespace engine
}  // namespace hora
