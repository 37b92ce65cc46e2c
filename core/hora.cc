#include "hora/hora.h"

#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "collectives/backends/registry.h"
#include "collectives/failed_ranks.h"
#include "core/base/thread_leases.h"
#include "core/config.h"
#include "core/context.h"
#include "core/context_access.h"
#include "core/elastic_member.h"
#include "core/engine/engine.h"
#include "core/engine_access.h"
#include "core/init_options.h"
#include "core/layout.h"
#include "core/process_set_table.h"
#include "core/process_sets.h"
#include "hora/elastic.h"
#include "hora/logging.h"
#include "hora/mutex.h"
#include "hora/thread_annotations.h"
#include "kernels/kernels.h"

namespace hora {
namespace {

// The one static of the C++ API: the runtime and the number of inits so far.
struct Runtime {
  Mutex mu;  // held through init and shutdown
  std::unique_ptr<Context> context HORA_GUARDED_BY(mu);
  // Uses context's communicator; released first.
  std::shared_ptr<engine::Engine> engine HORA_GUARDED_BY(mu);
  // The process sets beyond the global one; their engines stop before the global one. Read
  // without mu by detail::process_set_table (valid from init until shutdown).
  std::unique_ptr<ProcessSetTable> sets;
  // Outside elastic mode, the number of inits so far: the next init's store generation.
  int generation HORA_GUARDED_BY(mu) = 0;
  // Elastic mode (HORA_ELASTIC=1): the membership, from the first init to the process's end
  // (its generation is the store generation), and the options every re-init by reset() takes
  // (those of the first init, without its process sets: ranks change across generations).
  std::unique_ptr<ElasticMember> elastic HORA_GUARDED_BY(mu);
  InitOptions elastic_options HORA_GUARDED_BY(mu);
  // What EngineLease reads without mu: engine.get() from init's start of it until shutdown
  // clears it, first thing. The leases themselves are the threads' (thread_leases.h):
  // shutdown clears the pointer, then waits for the leases taken before.
  std::atomic<engine::Engine*> leased{nullptr};
};

// How long shutdown waits for leases taken before it began: each is an enqueue, which does not
// block, so only a thread descheduled for that long outlasts it. Then the engine is kept alive
// (never released) rather than destroyed under it.
constexpr std::chrono::seconds kLeaseDrainLimit{30};

// Clears the engine for new leases and waits for those held: a timeout when one outlived
// kLeaseDrainLimit (thread_leases::drain).
Status drain_leases(Runtime& r) {
  r.leased.store(nullptr, std::memory_order_seq_cst);
  return thread_leases::drain(std::chrono::steady_clock::now() + kLeaseDrainLimit);
}

// Stops the process sets' engines, then the job's, and releases the context. The engines first:
// their shutdown rounds still need the communicators. Their own failures (a peer that died
// earlier) were already reported through the handles; this reports only what it could not
// release.
Status release(Runtime& r) HORA_REQUIRES(r.mu) {
  if (r.sets) r.sets->clear();
  Status engine_status = r.engine->stop();
  if (!engine_status.ok()) {
    HORA_LOG(kDebug) << "engine had stopped with: " << engine_status.to_string();
  }
  r.sets.reset();
  r.engine.reset();
  Status status = r.context->shutdown();
  r.context.reset();
  return status;
}

Runtime& runtime() {
  static Runtime* r = new Runtime();  // never destroyed: safe from atexit handlers
  return *r;
}

Status apply_cpu_isa(CpuIsa isa) {
  kernels::Isa want = kernels::best_isa();
  switch (isa) {
    case CpuIsa::kBest: want = kernels::best_isa(); break;
    case CpuIsa::kScalar: want = kernels::Isa::kScalar; break;
    case CpuIsa::kAvx2: want = kernels::Isa::kAvx2; break;
    case CpuIsa::kAvx512: want = kernels::Isa::kAvx512; break;
  }
  if (!kernels::isa_supported(want) || !kernels::select_isa(want))
    return Status::invalid_argument(std::string("HORA_CPU_ISA=") + cpu_isa_name(isa) +
                                    " but this CPU lacks it; the best it has is " +
                                    kernels::isa_name(kernels::best_isa()));
  return Status::OK();
}

int layout_field(int RankLayout::*field) {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  return r.context ? r.context->layout().*field : -1;
}

// The layout and store generation of the next init: the launcher's layout and the count of
// inits, or in elastic mode this worker's slot in the next generation that lists it (connecting
// horarun's store at the first elastic init). Blocks up to HORA_ELASTIC_TIMEOUT_S then.
StatusOr<std::pair<RankLayout, int>> next_membership(Runtime& r, const Config& config,
                                                     const Config::Lookup& lookup,
                                                     const InitOptions& options)
    HORA_REQUIRES(r.mu) {
  if (!elastic_mode(lookup)) {
    HORA_ASSIGN_OR_RETURN(RankLayout layout, read_rank_layout(lookup));
    return std::make_pair(std::move(layout), r.generation++);
  }
  if (!r.elastic) {
    HORA_ASSIGN_OR_RETURN(r.elastic, ElasticMember::connect(lookup, config.start_timeout_s));
    r.elastic_options = options;
    r.elastic_options.process_sets.clear();
  }
  HORA_ASSIGN_OR_RETURN(RankLayout layout, r.elastic->next_layout());
  return std::make_pair(std::move(layout), static_cast<int>(r.elastic->generation()));
}

// init() under r.mu, when not initialised.
Status init_locked(Runtime& r, const InitOptions& options) HORA_REQUIRES(r.mu) {
  HORA_ASSIGN_OR_RETURN(Config::Lookup lookup, make_lookup(options));
  HORA_ASSIGN_OR_RETURN(Config config, Config::from_lookup(lookup));
  set_log_level(config.log_level);
  HORA_RETURN_IF_ERROR(apply_cpu_isa(config.cpu_isa));
  HORA_ASSIGN_OR_RETURN(auto membership, next_membership(r, config, lookup, options));
  const RankLayout& layout = membership.first;
  const int generation = membership.second;
  set_log_rank(layout.rank);
  const bool dynamic_sets = options.dynamic_process_sets || config.dynamic_process_sets;
  HORA_ASSIGN_OR_RETURN(r.context, Context::create(config, layout, generation,
                                                   dynamic_sets || !options.process_sets.empty()));
  r.engine = std::make_shared<engine::Engine>(
      r.context->communicator(), engine_options_from(config), &r.context->store(),
      "hora/engine/" + std::to_string(generation) + "/", &r.context->topology(),
      &r.context->device_resources());
  // From now on this rank answers every round: a rank slow to reach its first collective is
  // alive to the others, a dead or stopped one is reported within HORA_TIMEOUT_S.
  r.engine->start();
  r.sets = std::make_unique<ProcessSetTable>(dynamic_sets);
  if (Status s = register_initial_process_sets(*r.context, *r.sets, options.process_sets);
      !s.ok()) {
    release(r).IgnoreError();  // the registration's error is the one to report
    return s;
  }
  r.leased.store(r.engine.get(), std::memory_order_seq_cst);
  return Status::OK();
}

// shutdown() under r.mu.
Status shutdown_locked(Runtime& r) HORA_REQUIRES(r.mu) {
  if (!r.context) return Status::OK();
  if (const Status drained = drain_leases(r); !drained.ok()) {
    HORA_LOG(kError) << "shutdown: cannot tell that no allreduce_async call still holds the "
                        "engine ("
                     << drained.to_string() << ", after up to " << kLeaseDrainLimit.count()
                     << " s); the engine is stopped but kept";
    new std::shared_ptr<engine::Engine>(r.engine);  // NOLINT: deliberately never released
  }
  return release(r);
}

double seconds_between(std::chrono::steady_clock::time_point a,
                       std::chrono::steady_clock::time_point b) {
  return std::chrono::duration<double>(b - a).count();
}

// The ranks of `generation` this process found dead or stopped (collectives/failed_ranks.h;
// still readable after the generation's shutdown), for the reset report, so horarun can remove
// a stopped worker at once instead of after its own deadline. Empty when the registry holds
// another generation's (an init that failed before it began this one's).
std::vector<int> failed_ranks_of(int64_t generation) {
  const collectives::FailedRanks& failed = collectives::FailedRanks::process();
  if (failed.generation() != generation) return {};
  return failed.culprits();
}

}  // namespace

Status init() { return init(InitOptions{}); }

Status init(const InitOptions& options) {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  if (r.context) return Status::OK();
  return init_locked(r, options);
}

Status shutdown() {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  return shutdown_locked(r);
}

namespace elastic {

bool enabled() { return elastic_mode(read_env); }

Status reset(bool hosts_updated, const std::string& reason) {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  if (!r.elastic)
    return Status::failed_precondition(
        "hora::elastic::reset() called outside an elastic job (HORA_ELASTIC=1 under horarun "
        "--min-np/--max-np/--host-discovery-script) or before hora::init()");
  const std::string who = "elastic worker " + std::to_string(r.elastic->worker_id()) +
                          " leaving generation " + std::to_string(r.elastic->generation());
  collectives::elastic::ResetReport report;
  report.hosts_updated = hosts_updated;
  report.failed_ranks = failed_ranks_of(r.elastic->generation());
  report.reason = reason;
  // A worker that never got an assignment (its first init timed out) has no generation to
  // leave: it only waits again.
  if (r.elastic->generation() >= 0) {
    if (Status posted = r.elastic->post_reset(report); !posted.ok())
      return posted.with_context(" (" + who + ": posting its reset report to horarun's store)");
  }
  // A peer still waiting on this rank (it has not seen the failure yet) learns from the store
  // that this rank is gone, within about a second rather than at its deadline.
  collectives::FailedRanks::process().announce_leaving(hosts_updated ? "hosts updated" : reason);
  // The old membership's failures were reported through its handles: what stopping it says
  // is only logged.
  const auto start = std::chrono::steady_clock::now();
  if (Status stopped = shutdown_locked(r); !stopped.ok()) {
    HORA_LOG(kDebug) << who << ": shutdown said " << stopped.to_string();
  }
  const auto stopped_at = std::chrono::steady_clock::now();
  if (Status joined = init_locked(r, r.elastic_options); !joined.ok())
    return joined.with_context(" (" + who + ")");
  HORA_LOG(kDebug) << who << ": shut down in " << seconds_between(start, stopped_at)
                   << " s, joined generation " << r.elastic->generation() << " in "
                   << seconds_between(stopped_at, std::chrono::steady_clock::now()) << " s";
  return Status::OK();
}

StatusOr<bool> hosts_updated() {
  uint8_t flag = 0;
  {
    Runtime& r = runtime();
    MutexLock lock(&r.mu);
    if (!r.elastic || !r.context)
      return Status::failed_precondition(
          "hora::elastic::hosts_updated() called outside an initialised elastic job");
    if (r.context->layout().rank == 0) {
      HORA_ASSIGN_OR_RETURN(bool set, r.elastic->hosts_updated_flag());
      flag = set ? 1 : 0;
    }
  }
  HORA_ASSIGN_OR_RETURN(TensorView view, TensorView::flat(&flag, DataType::kUint8, 1));
  HORA_RETURN_IF_ERROR(broadcast("hora.elastic.hosts_updated", view, 0));
  return flag != 0;
}

int64_t generation() {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  return r.elastic && r.context ? r.elastic->generation() : -1;
}

}  // namespace elastic

bool is_initialized() {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  return r.context != nullptr;
}

int rank() { return layout_field(&RankLayout::rank); }
int size() { return layout_field(&RankLayout::size); }
int local_rank() { return layout_field(&RankLayout::local_rank); }
int local_size() { return layout_field(&RankLayout::local_size); }
int cross_rank() { return layout_field(&RankLayout::cross_rank); }
int cross_size() { return layout_field(&RankLayout::cross_size); }

StatusOr<std::string> backend_name() {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  if (!r.context)
    return Status::failed_precondition(
        "hora::backend_name() called before hora::init() or after hora::shutdown()");
  return std::string(r.context->communicator().backend_name());
}

double timeout_s() {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  return r.context ? r.context->config().timeout_s : Config().timeout_s;
}

std::vector<std::string> available_backends() { return collectives::available_backends(); }

StatusOr<bool> is_homogeneous() {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  if (!r.context)
    return Status::failed_precondition(
        "hora::is_homogeneous() called before hora::init() or after hora::shutdown()");
  const collectives::Topology& t = r.context->topology();
  return t.min_local_size() == t.max_local_size();
}

Status start_timeline(const std::string& path, bool mark_cycles) {
  if (path.empty()) return Status::invalid_argument("hora::start_timeline: the file path is empty");
  auto eng = detail::engine();
  if (!eng)
    return Status::failed_precondition("hora::start_timeline('" + path +
                                       "') called before hora::init() or after hora::shutdown()");
  return eng->start_timeline(path, mark_cycles);
}

Status stop_timeline() {
  auto eng = detail::engine();
  if (!eng)
    return Status::failed_precondition(
        "hora::stop_timeline() called before hora::init() or after hora::shutdown()");
  eng->stop_timeline();
  return Status::OK();
}

namespace detail {

EngineLease::EngineLease() {
  thread_leases::enter();
  engine_ = runtime().leased.load(std::memory_order_seq_cst);
}

EngineLease::~EngineLease() { thread_leases::leave(); }

std::shared_ptr<engine::Engine> engine() {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  return r.engine;
}

ProcessSetTable* process_set_table() { return runtime().sets.get(); }

Context* context() {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  return r.context.get();
}

Status pause_engine(std::chrono::milliseconds timeout) {
  std::shared_ptr<engine::Engine> eng = engine();
  if (!eng) return Status::failed_precondition("pause_engine() called before hora::init");
  return eng->pause(timeout);
}

void resume_engine() {
  std::shared_ptr<engine::Engine> eng = engine();
  if (eng) eng->resume();
}
}  // namespace detail

}  // namespace hora
