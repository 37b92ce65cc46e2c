#include "core/engine/engine.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>

#include "core/base/logging.h"

namespace hora {
namespace engine {
namespace {

collectives::Algorithm to_algorithm(AllreduceAlgo a) {
  switch (a) {
    case AllreduceAlgo::kAuto: return collectives::Algorithm::kAuto;
    case AllreduceAlgo::kRing: return collectives::Algorithm::kRing;
    case AllreduceAlgo::kTree: return collectives::Algorithm::kTree;
    case AllreduceAlgo::kRecursiveDoubling: return collectives::Algorithm::kRecursiveDoubling;
    case AllreduceAlgo::kNative: return collectives::Algorithm::kNative;
    case AllreduceAlgo::kHierarchical: return collectives::Algorithm::kHierarchical;
  }
  return collectives::Algorithm::kAuto;
}

// A burst of enqueues that pauses this long is complete (see loop()).
constexpr std::chrono::microseconds kQuiet{50};
// How long a failing rank waits for the other ranks' failure posts before it fails its handles
// (part of the margin over HORA_TIMEOUT_S within which a dead or stopped rank is reported).
constexpr std::chrono::milliseconds kBoardWait{1000};

// Shows in top, gdb and /proc/<pid>/task/*/comm (at most 15 characters).
void set_thread_name(const char* name) { pthread_setname_np(pthread_self(), name); }

Clock::duration ms(double v) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(v));
}

}  // namespace

Engine::Engine(collectives::Communicator& comm, const Config& config, collectives::Store* store,
               const std::string& store_prefix, const collectives::Topology* topology,
               const DeviceResources* device)
    : comm_(comm), config_(config), board_(store, store_prefix, comm.rank(), comm.size()) {
  ControllerOptions co;
  co.timeout_s = config.timeout_s;
  co.stall_warning_s = config.stall_warning_s;
  co.stall_shutdown_s = config.stall_shutdown_s;
  co.cache_capacity = config.cache_capacity;
  co.timeline = &timeline_;
  controller_ = std::make_unique<Controller>(comm_, co);
  ExecutorOptions eo;
  eo.timeout_s = config.timeout_s;
  eo.fusion_threshold_bytes = config.fusion_threshold_bytes;
  eo.fusion_in_place = config.fusion_in_place;
  eo.algorithm = to_algorithm(config.allreduce_algo);
  const bool hosts = topology != nullptr && topology->hosts() > 1;
  if (hosts && config.hierarchical_allreduce == HierarchicalMode::kOn)
    eo.algorithm = collectives::Algorithm::kHierarchical;
  if (!hosts && eo.algorithm == collectives::Algorithm::kHierarchical)
    eo.algorithm = collectives::Algorithm::kAuto;  // one host: nothing to be hierarchical about
  if (config.hierarchical_allreduce != HierarchicalMode::kOff) eo.topology = topology;
  // Allgather: on (1), or auto when the link across hosts was measured slower per byte than
  // the one within a host.
  const bool slower_across = hosts && topology->cross.measured && topology->intra.measured &&
                             topology->cross.beta_us_per_byte > topology->intra.beta_us_per_byte;
  if (hosts && (config.hierarchical_allgather == HierarchicalMode::kOn ||
                (config.hierarchical_allgather == HierarchicalMode::kAuto && slower_across)))
    eo.allgather_topology = topology;
  DeviceExecutorOptions deo;
  deo.timeout_s = config.timeout_s;
  deo.algorithm = eo.algorithm;
  deo.topology = eo.topology;
  device_executor_ = std::make_unique<DeviceExecutor>(device ? *device : DeviceResources{}, comm_,
                                                      deo, queue_, &timeline_);
  eo.device = device_executor_.get();
  executor_ = std::make_unique<Executor>(comm_, eo, queue_, timeline_);
}

Engine::~Engine() { stop(); }

void Engine::start() {
  MutexLock lock(&mu_);
  start_locked();
}

void Engine::start_locked() {
  if (started_) return;
  started_ = true;
  if (comm_.rank() == 0) {
    Status s = timeline_.open(config_.timeline_path);
    if (!s.is_ok()) {
      HORA_LOG(kWarning) << "timeline off: " << s.to_string();
    }
  }
  thread_ = std::thread([this] { loop(); });
}

Status Engine::enqueue(std::vector<Entry> entries) {
  {
    MutexLock lock(&mu_);
    if (stopped_)
      return Status::failed_precondition(
          "tensor '" + (entries.empty() ? std::string() : entries[0].request.name) +
          "': hora has been shut down on this rank");
    start_locked();
  }
  HORA_RETURN_IF_ERROR(device_executor_->admit(entries));  // device tensors: route, ready event
  return queue_.enqueue(std::move(entries));
}

Status Engine::ended_status() const {
  return fatal_.is_ok() ? Status::failed_precondition("hora's engine has stopped on rank " +
                                                      std::to_string(comm_.rank()))
                        : fatal_;
}

Status Engine::pause(std::chrono::milliseconds timeout) {
  const Clock::time_point until = Clock::now() + timeout;
  {
    MutexLock lock(&mu_);
    if (stopped_ || loop_ended_) return ended_status();
    if (parked_) return Status::ok();
    start_locked();
    pause_asked_ = true;
  }
  queue_.wake();  // ask in the next round rather than at the next heartbeat
  MutexLock lock(&mu_);
  while (!parked_ && !loop_ended_ && Clock::now() < until) cv_.wait_until(mu_, until);
  if (parked_) return Status::ok();
  pause_asked_ = false;
  if (loop_ended_) return ended_status();
  return Status::timeout("pausing hora's engine on rank " + std::to_string(comm_.rank()) +
                         ": not every rank asked within " + std::to_string(timeout.count()) +
                         " ms (every rank must call it)");
}

void Engine::resume() {
  {
    MutexLock lock(&mu_);
    pause_asked_ = false;
  }
  cv_.notify_all();
}

void Engine::park() {
  MutexLock lock(&mu_);
  parked_ = true;
  cv_.notify_all();
  while (pause_asked_ && !stopped_) cv_.wait(mu_);
  parked_ = false;
}

bool Engine::pause_asked() const {
  MutexLock lock(&mu_);
  return pause_asked_;
}

void Engine::finish(const Status& fatal) {
  {
    MutexLock lock(&mu_);
    loop_ended_ = true;
    fatal_ = fatal;
  }
  cv_.notify_all();
}

void Engine::fail_all(const Status& why) {
  for (Entry& e : queue_.close(why)) {
    e.handle->complete(Status(why.code(), "tensor '" + e.request.name + "': " + why.message()));
  }
}

void Engine::wait_for_round() {
  const Clock::duration cycle = ms(config_.cycle_time_ms);
  const Clock::time_point now = Clock::now();
  if (controller_->has_pending()) {
    // The last round agreed something: what is left is likely the other ranks' next requests,
    // so go straight into the next round (it waits for them). A round that agreed nothing is
    // followed by one cycle time, cut short by a new request here, so ranks that wait on each
    // other do not spin rounds.
    if (!last_round_progressed_) queue_.wait_for_work(now + cycle);
    return;
  }
  if (!queue_.wait_for_work(now + ms(config_.heartbeat_ms))) return;
  // One rank: nothing to negotiate, so nothing gained by waiting for more.
  if (comm_.size() == 1) return;
  // Something arrived: let the rest of this burst join it, until the cycle time has passed,
  // the burst went quiet (no new request for kQuiet), or a caller waits on a handle while its
  // requests are still here (it enqueues nothing more: a lone blocking call goes at once), so
  // a step's tensors enqueued back to back are negotiated and fused at once.
  const Clock::time_point until = Clock::now() + cycle;
  size_t seen = queue_.fresh_count();
  while (true) {
    const Clock::time_point t = Clock::now();
    if (t >= until) break;
    size_t n = 0;
    if (queue_.wait_in_burst(std::min<Clock::time_point>(t + kQuiet, until), &n)) break;
    if (n == seen) break;
    seen = n;
  }
}

void Engine::loop() {
  set_thread_name("hora-engine");
  bool asked_shutdown = false;
  Status fatal;
  while (true) {
    wait_for_round();
    asked_shutdown = asked_shutdown || queue_.shutdown_requested();
    Controller::Asks asks;
    asks.shutdown = asked_shutdown;
    asks.pause = !asked_shutdown && pause_asked();
    StatusOr<ResponseList> list = controller_->round(queue_.take_new(), asks);
    Status status = list.status();
    last_round_progressed_ = status.is_ok() && !list->responses.empty();
    if (status.is_ok()) status = executor_->execute(*list);
    if (status.is_ok() && !list->fatal.empty()) status = Status(StatusCode::kTimeout, list->fatal);

    if (!status.is_ok()) {
      // Post before aborting (a neighbour blocked on this rank fails once it aborts and then
      // finds the post), and name the root cause other ranks saw.
      board_.post(status.message());
      comm_.abort();
      if (!collectives::FailureBoard::has_reports(status.message()))
        status = Status(status.code(), board_.collect(status.message(), kBoardWait));
      HORA_LOG(kError) << "engine stopped: " << status.to_string();
      fatal = status;
      fail_all(status);
      break;
    }
    if (list->shutdown) {
      fail_all(Status::failed_precondition(
          asked_shutdown ? "hora was shut down before this collective completed"
                         : list->shutdown_by + " shut hora down before this collective completed"));
      break;
    }
    if (list->pause) park();
  }
  timeline_.close();
  finish(fatal);
}

Status Engine::stop() {
  {
    MutexLock lock(&mu_);
    if (stopped_) return fatal_;
    stopped_ = true;
    pause_asked_ = false;
    // Take part in the shutdown round even if this rank never ran a collective.
    start_locked();
  }
  cv_.notify_all();  // a parked loop resumes for the shutdown round
  queue_.request_shutdown();
  if (thread_.joinable()) thread_.join();
  MutexLock lock(&mu_);
  return fatal_;
}

EngineStats Engine::stats() const {
  const ControllerStats& cs = controller_->stats();
  const ExecutorStats& es = executor_->stats();
  EngineStats s;
  s.rounds = cs.rounds;
  s.cache_hits = cs.cache_hits;
  s.coordinated = cs.coordinated;
  s.buckets = es.buckets;
  s.fused_tensors = es.fused_tensors;
  s.cache_evictions = cs.evictions;
  s.errors = es.errors;
  return s;
}

}  // namespace engine
}  // namespace hora
