// Engine: the background thread's loop, and the front door the API (core/api.cc) enqueues to.
//
// Loop: sleep until a request arrives (then collect more to fuse, for at most
// HORA_CYCLE_TIME_MS, ending early once no new request came for 50 us), until
// the idle heartbeat (HORA_HEARTBEAT_MS), or, while this rank has requests not yet agreed,
// one cycle time; then run one negotiation round (Controller) and execute what it agreed
// (Executor). No busy polling: an idle engine runs one small round per heartbeat.
//
// The thread starts with the first collective, or at stop() (so that this rank still takes
// part in the shutdown round the others wait for): a process that only initialises costs
// nothing, and code that uses the Communicator directly before any collective (tests,
// benchmarks) does not race with the engine.
//
// Stop: stop() asks for the shutdown round; every rank leaves its loop after the round in which
// any rank asked. Handles still pending then fail (kFailedPrecondition naming the tensor); a
// communication failure or a fatal stall fails every pending handle with that error and
// closes the queue, so later enqueues fail at once with it.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "collectives/communicator.h"
#include "core/base/status.h"
#include "core/config.h"
#include "core/engine/controller.h"
#include "core/engine/executor.h"
#include "collectives/rendezvous/failure_board.h"
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
  Engine(collectives::Communicator& comm, const Config& config, collectives::Store* store,
         const std::string& store_prefix, const collectives::Topology* topology = nullptr);
  ~Engine();
  Engine(const Engine&) = delete;
  Engine& operator=(const Engine&) = delete;

  // Adds the entries atomically and returns one handle for all of them (group) or fails.
  // Starts the background thread on first use.
  Status enqueue(std::vector<Entry> entries);
  // Runs the shutdown round and joins the thread. Idempotent. Returns the engine's fatal
  // error if it had one.
  Status stop();

  int size() const { return comm_.size(); }
  int rank() const { return comm_.rank(); }
  double timeout_s() const { return config_.timeout_s; }
  EngineStats stats() const;

 private:
  void start_locked();
  void loop();
  void fail_all(const Status& why);

  collectives::Communicator& comm_;
  const Config config_;
  TensorQueue queue_;
  Timeline timeline_;
  collectives::FailureBoard board_;
  std::unique_ptr<Controller> controller_;
  std::unique_ptr<Executor> executor_;
  std::mutex start_mu_;
  std::thread thread_;
  bool started_ = false;
  bool stopped_ = false;
  Status fatal_;  // set by the thread before it exits; read after join
};

}  // namespace engine
}  // namespace hora
