#include "core/engine/engine.h"

#include <pthread.h>

#include <algorithm>
#include <chrono>
#include <cstdint>

#include "hora/logging.h"

namespace hora {
namespace engine {
namespace {

// A burst of enqueues that pauses this long is complete (see loop()).
constexpr std::chrono::microseconds kQuiet{50};
// A helped burst of this much work (TensorQueue::waiting) likely outlasts kQuiet
// (Engine::waiting).
constexpr size_t kStandAsideBytes = size_t{256} << 10;
// After this many bursts in a row whose round a helping caller ran, the background thread
// expects the next one to be helped too (Engine::wait_for_round).
constexpr int kPredictHelpAfter = 3;
// Expecting a helper, the background thread sleeps through this many cycle times after a
// burst's first enqueue: a burst nobody waits on goes then (once: it ends the prediction).
constexpr int kPredictedBurstCycles = 8;
// How long a failing rank waits for the other ranks' failure posts before it fails its handles
// (part of the margin over HORA_TIMEOUT_S within which a dead or stopped rank is reported).
constexpr std::chrono::milliseconds kBoardWait{1000};

// This thread runs a round now (holds the run token): it must not help (the token is not
// reentrant; a completion callback that waits on another handle runs inside a round).
thread_local bool t_in_round = false;

// Shows in top, gdb and /proc/<pid>/task/*/comm (at most 15 characters).
void set_thread_name(const char* name) { pthread_setname_np(pthread_self(), name); }

Clock::duration ms(double v) {
  return std::chrono::duration_cast<Clock::duration>(std::chrono::duration<double, std::milli>(v));
}

}  // namespace

Engine::Engine(collectives::Communicator& comm, const EngineOptions& options,
               collectives::Store* store, const std::string& store_prefix,
               const collectives::Topology* topology, const DeviceResources* device)
    : comm_(comm),
      options_(options),
      board_(store, store_prefix, comm.rank(), comm.size(), options.members),
      help_enabled_(options.waiters_help),
      stamp_enqueues_(comm.rank() == 0 && !options.timeline_path.empty()) {
  cycle_time_ms_.store(options.cycle_time_ms, std::memory_order_relaxed);
  ControllerOptions co;
  co.timeout_s = options.timeout_s;
  co.stall_warning_s = options.stall_warning_s;
  co.stall_shutdown_s = options.stall_shutdown_s;
  co.cache_capacity = options.cache_capacity;
  co.timeline = &timeline_;
  controller_ = std::make_unique<Controller>(comm_, co);
  ExecutorOptions eo;
  eo.timeout_s = options.timeout_s;
  eo.fusion_threshold_bytes = options.fusion_threshold_bytes;
  eo.fusion_in_place = options.fusion_in_place;
  eo.algorithm = options.algorithm;
  eo.autotune = options.autotune;
  eo.autotune_samples = options.autotune_samples;
  const bool hosts = topology != nullptr && topology->hosts() > 1;
  if (hosts && options.hierarchical_allreduce == HierarchicalMode::kOn)
    eo.algorithm = collectives::Algorithm::kHierarchical;
  if (!hosts && eo.algorithm == collectives::Algorithm::kHierarchical)
    eo.algorithm = collectives::Algorithm::kAuto;  // one host: nothing to be hierarchical about
  if (options.hierarchical_allreduce != HierarchicalMode::kOff) eo.topology = topology;
  // Allgather: on (1), or auto when the link across hosts was measured slower per byte than
  // the one within a host.
  const bool slower_across = hosts && topology->cross.measured && topology->intra.measured &&
                             topology->cross.beta_us_per_byte > topology->intra.beta_us_per_byte;
  if (hosts && (options.hierarchical_allgather == HierarchicalMode::kOn ||
                (options.hierarchical_allgather == HierarchicalMode::kAuto && slower_across)))
    eo.allgather_topology = topology;
  DeviceExecutorOptions deo;
  deo.timeout_s = options.timeout_s;
  deo.algorithm = eo.algorithm;
  deo.topology = eo.topology;
  deo.host_waits = options.device_host_waits;
  device_executor_ = std::make_unique<DeviceExecutor>(device ? *device : DeviceResources{}, comm_,
                                                      deo, queue_, &timeline_);
  eo.device = device_executor_.get();
  executor_ = std::make_unique<Executor>(comm_, eo, queue_, timeline_);
  autotuner_ = make_autotuner(options, eo);
}

std::unique_ptr<Autotuner> Engine::make_autotuner(const EngineOptions& options,
                                                  const ExecutorOptions& eo) {
  AutotunerOptions ao;
  ao.enabled = options.autotune_params;
  ao.log_path = options.autotune_log;
  ao.timeout_s = options.timeout_s;
  ParameterManagerOptions& m = ao.manager;
  m.warmup_steps = options.autotune_warmup_steps;
  m.window_steps = options.autotune_window_steps;
  m.max_samples = options.autotune_max_samples;
  m.start.fusion_threshold_bytes = options.fusion_threshold_bytes;
  m.start.cycle_time_ms = options.cycle_time_ms;
  m.start.cache_enabled = options.cache_capacity > 0;
  m.start.hierarchical_allreduce = eo.algorithm == collectives::Algorithm::kHierarchical;
  m.start.hierarchical_allgather = eo.allgather_topology != nullptr;
  m.tune_fusion = !options.fusion_threshold_set;
  // One rank has no burst window to tune.
  m.tune_cycle = !options.cycle_time_set && comm_.size() > 1;
  m.tune_cache = !options.cache_set && comm_.size() > 1;
  auto apply = [this](const AutotuneValues& v) {
    executor_->set_fusion_threshold(v.fusion_threshold_bytes);
    cycle_time_ms_.store(v.cycle_time_ms, std::memory_order_relaxed);
    controller_->set_cache_enabled(v.cache_enabled);
  };
  auto algorithms = [this] {
    return describe_algorithms(
        [this](int c) { return static_cast<int>(executor_->tuner().decided(c)); });
  };
  auto tuning_samples = [this] { return executor_->tuner().samples_taken(); };
  return std::make_unique<Autotuner>(comm_, ao, apply, algorithms, tuning_samples);
}

// The engine's fatal error, if any, was delivered to every handle and returned by the first
// stop(); a destructor has no one left to tell.
Engine::~Engine() { stop().IgnoreError(); }

void Engine::start() {
  MutexLock lock(&mu_);
  start_locked();
}

void Engine::start_locked() {
  if (started_) return;
  started_ = true;
  accepting_.store(!stopped_, std::memory_order_release);
  // A timeline start_timeline() opened before the first enqueue stays open.
  if (comm_.rank() == 0 && !options_.timeline_path.empty()) {
    Status s = timeline_.open(options_.timeline_path);
    if (!s.ok()) {
      HORA_LOG(kWarning) << "timeline off: " << s.to_string();
    }
  }
  thread_ = std::thread([this] { loop(); });
}

Status Engine::start_timeline(const std::string& path, bool mark_cycles) {
  if (comm_.rank() != 0) return Status::OK();
  Status s = timeline_.open(path, mark_cycles);
  stamp_enqueues_.store(timeline_.enabled(), std::memory_order_relaxed);
  return s;
}

void Engine::stop_timeline() {
  if (comm_.rank() != 0) return;
  stamp_enqueues_.store(false, std::memory_order_relaxed);
  timeline_.close();
}

Status Engine::enqueue(std::vector<Entry>&& entries) {
  // As enqueue_allreduce: the engine's mutex only before the start and after the stop (the
  // background thread takes it every round; a burst of device tensors contended for it).
  if (!accepting_.load(std::memory_order_acquire)) {
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

Status Engine::enqueue_allreduce(AllreduceSpec&& spec) {
  if (!accepting_.load(std::memory_order_acquire)) {
    MutexLock lock(&mu_);
    if (stopped_)
      return Status::failed_precondition("tensor '" + *spec.name +
                                         "': hora has been shut down on this rank");
    start_locked();
  }
  // Host tensors: DeviceExecutor::admit has nothing to route or record.
  return queue_.enqueue_allreduce(std::move(spec));
}

Status Engine::ended_status() const {
  return fatal_.ok() ? Status::failed_precondition("hora's engine has stopped on rank " +
                                                   std::to_string(comm_.rank()))
                     : fatal_;
}

Status Engine::pause(std::chrono::milliseconds timeout) {
  const Clock::time_point until = Clock::now() + timeout;
  {
    MutexLock lock(&mu_);
    if (stopped_ || loop_ended_) return ended_status();
    if (parked_) return Status::OK();
    start_locked();
    pause_asked_ = true;
  }
  queue_.wake();  // ask in the next round rather than at the next heartbeat
  MutexLock lock(&mu_);
  while (!parked_ && !loop_ended_ && Clock::now() < until) cv_.wait_until(mu_, until);
  if (parked_) return Status::OK();
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
  // Device work in flight completes (or fails) first: a handle completes only once its output
  // was written.
  device_executor_->drain().IgnoreError();  // its failures reached their handles
  for (Entry& e : queue_.close(why)) {
    e.handle->complete(Status(why.code(), "tensor '" + e.request.name + "': " + why.message()));
  }
}

bool Engine::wait_for_round() {
  const Clock::duration cycle = ms(cycle_time_ms_.load(std::memory_order_relaxed));
  const Clock::time_point now = Clock::now();
  if (pending_.load(std::memory_order_acquire)) {
    // The last round agreed something: what is left is likely the other ranks' next requests,
    // so go straight into the next round (it waits for them). A round that agreed nothing is
    // followed by one cycle time, cut short by a new request here, so ranks that wait on each
    // other do not spin rounds.
    if (!last_round_progressed_.load(std::memory_order_acquire)) queue_.wait_for_work(now + cycle);
    return false;
  }
  if (!queue_.wait_for_work(now + ms(options_.heartbeat_ms))) return true;  // the heartbeat
  while (true) {
    // One rank: nothing to negotiate, so nothing gained by waiting for more. Woken with nothing
    // new (a helping caller left work to this thread): no burst to wait for.
    if (comm_.size() == 1 || queue_.fresh_count() == 0) return false;
    // Something arrived: let the rest of this burst join it, until the cycle time has passed,
    // the burst went quiet (no new request for kQuiet), or a caller waits on a handle while
    // its requests are still here (it enqueues nothing more: a lone blocking call goes at
    // once), so a step's tensors enqueued back to back are negotiated and fused at once.
    const uint64_t takes = queue_.takes();
    if (predicting_help()) {
      // The last bursts were all taken by a caller that waited and helped (a training loop's
      // steps): expect this one to be too, and sleep through kPredictedBurstCycles cycle
      // times instead of quiet windows. Their wake-ups, and the stand-aside wake-up
      // (waiting()), each took the core a rank at work needed: with two ranks on two cores, a
      // 200 x 4 B step fell from 51-74 us to 39-41 us without them, and a 200 x 16 KiB step
      // (about 240 us, a quarter of a cycle time) lost the wake-up at each cycle's end. A
      // burst nobody waits on goes when the window ends, and ends the prediction.
      size_t n = 0;
      queue_.wait_in_burst(Clock::now() + cycle * kPredictedBurstCycles, &n);
    } else {
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
    if (!helper_active() && queue_.takes() == takes) {
      helped_bursts_.store(0, std::memory_order_relaxed);
      return false;
    }
    // A helping caller runs this burst's round (it ended the burst, or took its requests
    // already): stand aside instead of queueing on the run token, which would wake this
    // thread again when the helper's round ends, on a core the job needs. help() wakes it
    // when it leaves work here.
    if (helped_bursts_.load(std::memory_order_relaxed) < kPredictHelpAfter)
      helped_bursts_.fetch_add(1, std::memory_order_relaxed);
    switch (queue_.wait_after_help(takes, Clock::now() + ms(options_.heartbeat_ms))) {
      case TensorQueue::AfterHelp::kWoken: return false;
      case TensorQueue::AfterHelp::kTimeout: return true;  // the heartbeat
      case TensorQueue::AfterHelp::kFresh: break;          // a new burst
    }
  }
}

bool Engine::predicting_help() const {
  return helped_bursts_.load(std::memory_order_relaxed) >= kPredictHelpAfter;
}

bool Engine::helper_active() const {
  MutexLock lock(&mu_);
  return helpers_ > 0;
}

bool Engine::round_due() {
  if (pending_.load(std::memory_order_relaxed) || queue_.fresh_count() > 0 ||
      queue_.shutdown_requested() || pause_asked())
    return true;
  // No round for a heartbeat (by any thread): this rank still answers the others' rounds.
  return Clock::now() - last_round_ >= ms(options_.heartbeat_ms);
}

bool Engine::step(bool helping) {
  t_in_round = true;
  if (timeline_.marks_cycles()) timeline_.mark_cycle(Clock::now());
  Controller::Asks asks;
  if (!helping) {
    asked_shutdown_ = asked_shutdown_ || queue_.shutdown_requested();
    asks.shutdown = asked_shutdown_;
    asks.pause = !asked_shutdown_ && pause_asked();
  }
  queue_.take_new(&taken_);
  StatusOr<ResponseList> list = controller_->round(taken_, asks);
  Status status = list.status();
  last_round_progressed_.store(status.ok() && !list->responses.empty(), std::memory_order_release);
  if (status.ok()) status = executor_->execute(*list);
  if (status.ok()) status = autotuner_->after_round(*list);
  if (list.ok()) controller_->recycle(*list);
  if (status.ok() && !list->fatal.empty()) status = Status(StatusCode::kTimeout, list->fatal);
  pending_.store(controller_->has_pending(), std::memory_order_release);
  last_round_ = Clock::now();
  t_in_round = false;

  if (!status.ok()) {
    // Post before aborting (a neighbour blocked on this rank fails once it aborts and then
    // finds the post), and name the root cause other ranks saw.
    board_.post(status.message());
    comm_.abort();
    if (!collectives::FailureBoard::has_reports(status.message()))
      status = Status(status.code(), board_.collect(status.message(), kBoardWait));
    HORA_LOG(kError) << "engine stopped: " << status.to_string();
    run_fatal_ = status;
    fail_all(status);
    ended_ = true;
    return false;
  }
  if (list->shutdown) {
    // Another rank's shutdown is a peer leaving the job (kRemote: elastic mode recovers from
    // it like from a failure); this rank's own is a call-order error.
    fail_all(
        asked_shutdown_
            ? Status::failed_precondition("hora was shut down before this collective completed")
            : Status(StatusCode::kRemote,
                     list->shutdown_by + " shut hora down before this collective completed"));
    ended_ = true;
    return false;
  }
  if (list->pause) park_due_ = true;
  return true;
}

void Engine::loop() {
  set_thread_name("hora-engine");
  while (true) {
    const bool forced = wait_for_round();
    bool park_now = false;
    {
      MutexLock run(&run_mu_);
      if (ended_) break;
      // A helping caller may have run the rounds this wake-up was for.
      if (!park_due_ && (forced || round_due()) && !step(false)) break;
      park_now = park_due_;
      park_due_ = false;
    }
    if (park_now) park();
  }
  timeline_.close();
  Status fatal;
  {
    MutexLock run(&run_mu_);
    fatal = run_fatal_;
  }
  finish(fatal);
}

bool Engine::waiting() {
  bool help = help_enabled_ && !t_in_round;
  if (help) {
    MutexLock lock(&mu_);
    help = !(stopped_ || loop_ended_ || pause_asked_ || parked_);
    if (help) ++helpers_;
  }
  // The burst is over whether or not this thread helps. Without a helper the background
  // thread is woken to run the round. With one, it is woken only for a burst whose work
  // (TensorQueue::waiting: its bytes plus 2 KiB a tensor) reaches kStandAsideBytes, to stand
  // aside at once (wait_for_round): left asleep, its quiet window (kQuiet) would end in the
  // middle of the helper's collective and take a core from a rank at work (with two ranks on
  // two cores that cost more than the whole engine: a 200 x 16 KiB step took 1.6x one raw
  // allreduce with the thread asleep throughout, 2.2-2.7x with it woken there). A smaller burst is
  // over before the window ends, so waking the thread would only cost its wake-up (on a shared
  // core, mpirun binding each rank to one, it preempts the waker; a 16-tensor 128 B call went from
  // 12 to 40 us in some runs). While the thread predicts a helper (wait_for_round), it sleeps
  // through its window whatever the burst's size, and is not woken either.
  queue_.waiting(!help ? 0 : predicting_help() ? SIZE_MAX : kStandAsideBytes);
  return help;
}

void Engine::help(const detail::HandleState& state) {
  bool wake = false;
  while (true) {
    if (!run_mu_.try_lock()) break;  // another thread runs a round: it completes the handle
    bool ran = false, more = true;
    if (!ended_ && !queue_.shutdown_requested() && !pause_asked() && round_due()) {
      ran = true;
      more = step(true);
    }
    const bool ended = ended_, park = park_due_;
    run_mu_.unlock();
    if (ended || park || !more) {
      wake = true;  // the loop ends or parks
      break;
    }
    if (!ran) break;
    if (state.is_done()) break;
    // Not done yet. A round that agreed nothing waits for other ranks: the loop's cycle
    // pacing takes over rather than this thread spinning rounds.
    if (!last_round_progressed_.load(std::memory_order_acquire)) {
      wake = true;
      break;
    }
  }
  // The background thread stands aside while a caller helps (wait_for_round): wake it for
  // whatever this caller leaves, requests not yet agreed or not yet taken.
  if (wake || pending_.load(std::memory_order_acquire) || queue_.fresh_count() > 0) queue_.wake();
  end_help();
}

void Engine::end_help() {
  // Notified under mu_: stop() returns (and shutdown destroys the engine) once it sees no
  // helper, so a notification after the unlock could reach a destroyed condition variable
  // (engine_lease_test found it under TSan).
  MutexLock lock(&mu_);
  --helpers_;
  cv_.notify_all();
}

Status Engine::stop() {
  {
    MutexLock lock(&mu_);
    if (stopped_) return fatal_;
    stopped_ = true;
    accepting_.store(false, std::memory_order_release);
    pause_asked_ = false;
    // Take part in the shutdown round even if this rank never ran a collective.
    start_locked();
  }
  cv_.notify_all();  // a parked loop resumes for the shutdown round
  queue_.request_shutdown();
  if (thread_.joinable()) thread_.join();
  MutexLock lock(&mu_);
  // A caller inside help() leaves within one round (the loop has ended: nothing more is due).
  while (helpers_ > 0) cv_.wait(mu_);
  return fatal_;
}

EngineStats Engine::stats() const {
  const ControllerStats& cs = controller_->stats();
  const ExecutorStats& es = executor_->stats();
  EngineStats s;
  s.rounds = cs.rounds;
  s.cache_hits = cs.cache_hits;
  s.repeated_steps = cs.repeats;
  s.coordinated = cs.coordinated;
  s.buckets = es.buckets;
  s.fused_tensors = es.fused_tensors;
  s.cache_evictions = cs.evictions;
  s.errors = es.errors;
  return s;
}

}  // namespace engine
}  // namespace hora
