#include "core/hora.h"

#include <memory>

#include "core/base/logging.h"
#include "core/base/mutex.h"
#include "core/base/thread_annotations.h"
#include "core/config.h"
#include "core/context.h"
#include "core/context_access.h"
#include "core/engine/engine.h"
#include "core/engine/engine_access.h"
#include "core/init_options.h"
#include "kernels/kernels.h"

namespace hora {
namespace {

// The one static of the C++ API: the runtime and the number of inits so far.
struct Runtime {
  Mutex mu;  // held through init and shutdown
  std::unique_ptr<Context> context HORA_GUARDED_BY(mu);
  // Uses context's communicator; released first.
  std::shared_ptr<engine::Engine> engine HORA_GUARDED_BY(mu);
  int generation HORA_GUARDED_BY(mu) = 0;
};

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
  return Status::ok();
}

int layout_field(int RankLayout::*field) {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  return r.context ? r.context->layout().*field : -1;
}

}  // namespace

Status init() { return init(InitOptions{}); }

Status init(const InitOptions& options) {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  if (r.context) return Status::ok();
  HORA_ASSIGN_OR_RETURN(Config::Lookup lookup, make_lookup(options));
  HORA_ASSIGN_OR_RETURN(Config config, Config::from_lookup(lookup));
  HORA_ASSIGN_OR_RETURN(RankLayout layout, read_rank_layout(lookup));
  set_log_level(config.log_level);
  set_log_rank(layout.rank);
  HORA_RETURN_IF_ERROR(apply_cpu_isa(config.cpu_isa));
  const int generation = r.generation++;
  HORA_ASSIGN_OR_RETURN(r.context, Context::create(config, layout, generation));
  r.engine =
      std::make_shared<engine::Engine>(r.context->communicator(), config, &r.context->store(),
                                       "hora/engine/" + std::to_string(generation) + "/",
                                       &r.context->topology(), &r.context->device_resources());
  // From now on this rank answers every round: a rank slow to reach its first collective is
  // alive to the others, a dead or stopped one is reported within HORA_TIMEOUT_S.
  r.engine->start();
  return Status::ok();
}

Status shutdown() {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  if (!r.context) return Status::ok();
  // The engine first: its shutdown round still needs the communicator. Its own failure (a
  // peer that died earlier) was already reported through the handles; shutdown reports only
  // what it could not release.
  Status engine_status = r.engine->stop();
  if (!engine_status.is_ok()) {
    HORA_LOG(kDebug) << "engine had stopped with: " << engine_status.to_string();
  }
  r.engine.reset();
  Status status = r.context->shutdown();
  r.context.reset();
  return status;
}

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

namespace detail {
std::shared_ptr<engine::Engine> engine() {
  Runtime& r = runtime();
  MutexLock lock(&r.mu);
  return r.engine;
}

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
