// The process-set calls of hora/hora.h and ProcessSet's members: registering and removing sets
// collectively (the whole job agrees through the store first), and looking them up.
#include "core/process_sets.h"

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "collectives/rendezvous/store.h"
#include "core/context.h"
#include "core/context_access.h"
#include "core/engine_access.h"
#include "core/process_set_table.h"
#include "hora/hora.h"
#include "hora/mutex.h"

namespace hora {

struct ProcessSetAccess {
  static ProcessSet make(int id, std::vector<int> ranks) {
    ProcessSet set(std::move(ranks));
    set.id_ = id;
    return set;
  }
};

ProcessSet::ProcessSet(std::vector<int> ranks) : ranks_(std::move(ranks)) {
  std::sort(ranks_.begin(), ranks_.end());
}

int ProcessSet::rank_of(int global_rank) const {
  auto it = std::lower_bound(ranks_.begin(), ranks_.end(), global_rank);
  return it != ranks_.end() && *it == global_rank ? static_cast<int>(it - ranks_.begin()) : -1;
}

int ProcessSet::rank() const {
  const int me = hora::rank();
  return me < 0 ? -1 : rank_of(me);
}

namespace {

// Add and remove run one at a time in a process (they are collective, in the same order on
// every rank).
Mutex& change_mu() {
  static Mutex* mu = new Mutex();
  return *mu;
}

ProcessSet public_set(const ProcessSetInfo& info) {
  return ProcessSetAccess::make(info.id, info.ranks);
}

// The ranks of a set to register, sorted, or why they cannot be one.
StatusOr<std::vector<int>> checked_ranks(std::vector<int> ranks, int job_size) {
  if (ranks.empty())
    return Status::invalid_argument("a process set needs at least one rank, got none");
  std::sort(ranks.begin(), ranks.end());
  for (size_t i = 0; i < ranks.size(); ++i) {
    if (ranks[i] < 0 || ranks[i] >= job_size)
      return Status::invalid_argument("process set ranks [" + rank_list(ranks) + "]: rank " +
                                      std::to_string(ranks[i]) + " is not a rank of this job (0.." +
                                      std::to_string(job_size - 1) + ")");
    if (i > 0 && ranks[i] == ranks[i - 1])
      return Status::invalid_argument("process set ranks [" + rank_list(ranks) + "]: rank " +
                                      std::to_string(ranks[i]) + " is listed twice");
  }
  return ranks;
}

// Every rank posts `ask` (what it is about to do) under this change's serial and reads every
// other rank's: the job goes on only when all asked the same, else kMismatch naming who
// differs. Bounded by HORA_TIMEOUT_S (a rank that never asks is named).
Status agree(Context& context, int serial, const std::string& ask) {
  collectives::Store& store = context.store();
  const RankLayout& l = context.layout();
  const std::string prefix =
      "hora/ps/" + std::to_string(context.generation()) + "/ask/" + std::to_string(serial) + "/";
  HORA_RETURN_IF_ERROR(
      store.set(prefix + std::to_string(l.rank), collectives::Bytes(ask.begin(), ask.end())));
  const Deadline deadline = Deadline::after_seconds(context.config().timeout_s);
  for (int r = 0; r < l.size; ++r) {
    auto got = store.get(prefix + std::to_string(r), deadline);
    if (!got.ok())
      return got.status().with_context(" (rank " + std::to_string(l.rank) + " waiting for rank " +
                                       std::to_string(r) + " to " + ask + ")");
    const std::string theirs(got.value().begin(), got.value().end());
    if (theirs != ask)
      return Status::mismatch(
          "process sets are changed collectively, in the same order on "
          "every rank: rank " +
          std::to_string(l.rank) + " asked to " + ask + " but rank " + std::to_string(r) +
          " asked to " + theirs);
  }
  return Status::OK();
}

}  // namespace

StatusOr<ProcessSet> register_process_set(Context& context, ProcessSetTable& table,
                                          std::vector<int> ranks) {
  MutexLock lock(&change_mu());
  const int serial = table.take_serial();
  auto checked = checked_ranks(std::move(ranks), context.layout().size);
  // Every rank takes part in the agreement even with bad ranks (the others would wait for it).
  const std::string ask =
      checked.ok() ? "add [" + rank_list(checked.value()) + "]" : "add an invalid set";
  HORA_RETURN_IF_ERROR(agree(context, serial, ask));
  if (!checked.ok()) return checked.status();
  if (static_cast<int>(checked.value().size()) == context.layout().size)
    return Status::invalid_argument("process set ranks [" + rank_list(checked.value()) +
                                    "] are every rank of the job: that is the global process "
                                    "set (id 0)");
  if (auto same = table.find_ranks(checked.value()))
    return Status::invalid_argument("process set ranks [" + rank_list(checked.value()) +
                                    "] are already registered as " + same->name());
  const int id = table.take_id();
  HORA_ASSIGN_OR_RETURN(
      std::shared_ptr<ProcessSetInfo> set,
      make_process_set(context, id, checked.value(), serial,
                       Deadline::after_seconds(context.config().start_timeout_s)));
  ProcessSet out = public_set(*set);
  table.insert(std::move(set));
  return out;
}

Status register_initial_process_sets(Context& context, ProcessSetTable& table,
                                     const std::vector<std::vector<int>>& sets) {
  for (size_t i = 0; i < sets.size(); ++i) {
    std::vector<int> a = sets[i];
    std::sort(a.begin(), a.end());
    for (size_t j = 0; j < i; ++j) {
      std::vector<int> b = sets[j];
      std::sort(b.begin(), b.end());
      if (a == b)
        return Status::invalid_argument("init: process sets " + std::to_string(j) + " and " +
                                        std::to_string(i) + " both have ranks [" + rank_list(a) +
                                        "]; each set may be given once");
    }
  }
  for (const std::vector<int>& ranks : sets)
    HORA_RETURN_IF_ERROR(register_process_set(context, table, ranks).status());
  return Status::OK();
}

ProcessSet global_process_set() {
  const int n = hora::size();
  std::vector<int> ranks;
  ranks.reserve(static_cast<size_t>(std::max(n, 0)));
  for (int r = 0; r < n; ++r) ranks.push_back(r);
  return ProcessSetAccess::make(kGlobalProcessSet, std::move(ranks));
}

namespace {

// The runtime's context and table for a change of sets after init, or why there is none.
Status dynamic_runtime(const char* what, Context** context, ProcessSetTable** table) {
  *context = detail::context();
  *table = detail::process_set_table();
  if (*context == nullptr || *table == nullptr)
    return Status::failed_precondition(std::string(what) +
                                       " called before hora::init() or after hora::shutdown()");
  if (!(*table)->dynamic())
    return Status::failed_precondition(
        std::string(what) +
        ": this job's process sets are static; start it with dynamic process sets "
        "(HORA_DYNAMIC_PROCESS_SETS=1, InitOptions::dynamic_process_sets, or "
        "init(process_sets=\"dynamic\") in Python)");
  return Status::OK();
}

}  // namespace

StatusOr<ProcessSet> add_process_set(const std::vector<int>& ranks) {
  Context* context = nullptr;
  ProcessSetTable* table = nullptr;
  HORA_RETURN_IF_ERROR(dynamic_runtime("add_process_set", &context, &table));
  return register_process_set(*context, *table, ranks);
}

Status remove_process_set(int process_set_id) {
  Context* context = nullptr;
  ProcessSetTable* table = nullptr;
  HORA_RETURN_IF_ERROR(dynamic_runtime("remove_process_set", &context, &table));
  if (process_set_id == kGlobalProcessSet)
    return Status::invalid_argument(
        "remove_process_set: the global process set (id 0) cannot be "
        "removed");
  MutexLock lock(&change_mu());
  if (!table->find(process_set_id))
    return Status::invalid_argument("remove_process_set: process set " +
                                    std::to_string(process_set_id) +
                                    " is not registered (never added, or removed already)");
  HORA_RETURN_IF_ERROR(
      agree(*context, table->take_serial(), "remove set " + std::to_string(process_set_id)));
  return table->erase(process_set_id);
}

StatusOr<ProcessSet> get_process_set(int process_set_id) {
  if (process_set_id == kGlobalProcessSet) return global_process_set();
  ProcessSetTable* table = detail::process_set_table();
  auto set = table ? table->find(process_set_id) : nullptr;
  if (!set)
    return Status::invalid_argument("process set " + std::to_string(process_set_id) +
                                    " is not registered (never added, or removed already)");
  return public_set(*set);
}

std::vector<ProcessSet> process_sets() {
  std::vector<ProcessSet> out{global_process_set()};
  if (ProcessSetTable* table = detail::process_set_table())
    for (const auto& set : table->all()) out.push_back(public_set(*set));
  return out;
}

bool dynamic_process_sets() {
  ProcessSetTable* table = detail::process_set_table();
  return table != nullptr && table->dynamic();
}

}  // namespace hora
