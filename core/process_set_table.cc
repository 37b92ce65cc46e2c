#include "core/process_set_table.h"

#include <algorithm>
#include <utility>

#include "collectives/backends/registry.h"
#include "collectives/rendezvous/prefix_store.h"
#include "core/config.h"
#include "hora/logging.h"

namespace hora {

int ProcessSetInfo::set_rank_of(int global) const {
  auto it = std::lower_bound(ranks.begin(), ranks.end(), global);
  return it != ranks.end() && *it == global ? static_cast<int>(it - ranks.begin()) : -1;
}

std::string ProcessSetInfo::name() const {
  return "process set " + std::to_string(id) + " (ranks " + rank_list(ranks) + ")";
}

namespace {

// A member's communicator, GPU setup and engine of `set`, made as the job's own were.
Status connect_member(Context& context, ProcessSetInfo& set, int serial, Deadline deadline) {
  const Config& config = context.config();
  const int size = static_cast<int>(set.ranks.size());
  set.store = std::make_unique<collectives::PrefixStore>(
      "hora/ps/" + std::to_string(context.generation()) + "/" + std::to_string(serial),
      context.store());
  collectives::BackendOptions options = context.backend_options();
  options.members = set.ranks;
  HORA_ASSIGN_OR_RETURN(set.communicator,
                        collectives::make_communicator(context.host_backend(), set.set_rank, size,
                                                       *set.store, options, deadline));
  HORA_ASSIGN_OR_RETURN(
      set.device,
      DeviceSetup::create(backend_name_of(config), set.set_rank, size, context.layout().local_rank,
                          /*generation=*/0, config.timeout_s, *set.store, deadline));
  engine::EngineOptions engine_options = engine_options_from(config);
  engine_options.members = set.ranks;
  engine_options.autotune_log.clear();  // HORA_AUTOTUNE_LOG is the global set's
  set.engine = std::make_shared<engine::Engine>(*set.communicator, engine_options, set.store.get(),
                                                "engine/",
                                                /*topology=*/nullptr, &set.device->resources());
  set.engine->start();
  return Status::OK();
}

}  // namespace

StatusOr<std::shared_ptr<ProcessSetInfo>> make_process_set(Context& context, int id,
                                                           const std::vector<int>& ranks,
                                                           int serial, Deadline deadline) {
  auto set = std::make_shared<ProcessSetInfo>();
  set->id = id;
  set->ranks = ranks;
  set->set_rank = set->set_rank_of(context.layout().rank);
  auto label = std::make_shared<detail::SetContext>();
  label->label = " (" + set->name() + "; its rank i is the job's rank ranks[i])";
  label->ranks = ranks;
  set->context = std::move(label);
  if (set->set_rank >= 0) {
    Status s = connect_member(context, *set, serial, deadline);
    if (!s.ok())
      return s.with_context(" (connecting " + set->name() + " on rank " +
                            std::to_string(context.layout().rank) + ")");
  }
  return set;
}

ProcessSetTable::~ProcessSetTable() { clear(); }

std::shared_ptr<const ProcessSetInfo> ProcessSetTable::find(int id) const {
  MutexLock lock(&mu_);
  auto it = sets_.find(id);
  return it == sets_.end() ? nullptr : it->second;
}

std::vector<std::shared_ptr<const ProcessSetInfo>> ProcessSetTable::all() const {
  MutexLock lock(&mu_);
  std::vector<std::shared_ptr<const ProcessSetInfo>> out;
  for (const auto& [id, set] : sets_) out.push_back(set);
  return out;
}

std::shared_ptr<const ProcessSetInfo> ProcessSetTable::find_ranks(
    const std::vector<int>& ranks) const {
  MutexLock lock(&mu_);
  for (const auto& [id, set] : sets_)
    if (set->ranks == ranks) return set;
  return nullptr;
}

void ProcessSetTable::insert(std::shared_ptr<const ProcessSetInfo> set) {
  MutexLock lock(&mu_);
  const int id = set->id;
  sets_[id] = std::move(set);
}

Status ProcessSetTable::erase(int id) {
  std::shared_ptr<const ProcessSetInfo> set;
  {
    MutexLock lock(&mu_);
    auto it = sets_.find(id);
    if (it == sets_.end()) return Status::OK();
    set = std::move(it->second);
    sets_.erase(it);
  }
  // Outside the lock: the shutdown round waits for the set's other members.
  return set->engine ? set->engine->stop() : Status::OK();
}

void ProcessSetTable::clear() {
  std::map<int, std::shared_ptr<const ProcessSetInfo>> sets;
  {
    MutexLock lock(&mu_);
    sets.swap(sets_);
  }
  for (auto& [id, set] : sets) {
    if (!set->engine) continue;
    Status s = set->engine->stop();
    if (!s.ok()) {
      HORA_LOG(kDebug) << set->name() << "'s engine had stopped with: " << s.to_string();
    }
  }
}

int ProcessSetTable::take_id() {
  MutexLock lock(&mu_);
  return next_id_++;
}

int ProcessSetTable::take_serial() {
  MutexLock lock(&mu_);
  return next_serial_++;
}

}  // namespace hora
