// ProcessSetTable: the process sets of one initialised job (hora/process_set.h) other than the
// global one, and on each set's members the set's own communicator and engine.
//
// Why a communicator and an engine per set: a set negotiates, fuses and runs its collectives
// on its own, so a set whose ranks are late never holds back another set (Horovod runs every
// set through one background loop, one after the other), disjoint sets run at once, and
// fusion never mixes sets. The set's communicator is made like the job's (the same backend
// and options; mpi: a group of MPI_COMM_WORLD) under the store prefix
// "hora/ps/<generation>/<serial>/", where the serial counts registrations in this job (the
// same on every rank, since sets are made collectively in the same order), so a set made
// after another was removed never meets its keys. The set's engine has no topology (one host
// assumed: no hierarchical collectives within a set) and, where the job has GPUs, a
// DeviceSetup of its own (NCCL over the set).
//
// Threads: find()/all() from any thread; insert/erase from the thread that adds and removes
// sets (core/process_sets.cc serialises them).
#pragma once

#include <atomic>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"
#include "core/context.h"
#include "core/device_setup.h"
#include "core/engine/engine.h"
#include "core/engine/handle_state.h"
#include "hora/mutex.h"
#include "hora/status.h"
#include "hora/thread_annotations.h"

namespace hora {

// One registered set as the API's calls see it. Immutable once made; shared by the calls that
// use it, which keep its engine (and what the engine borrows) alive while they enqueue.
struct ProcessSetInfo {
  int id = -1;
  std::vector<int> ranks;  // sorted global ranks
  int set_rank = -1;       // this process's index in ranks, -1 when not a member
  // What the set's handles carry (label for errors, ranks for last_joined).
  std::shared_ptr<const detail::SetContext> context;
  // Members only, declared so that the engine goes first, then what it borrows.
  std::unique_ptr<collectives::Store> store;  // PrefixStore over the job's store
  std::unique_ptr<collectives::Communicator> communicator;
  std::unique_ptr<DeviceSetup> device;
  std::shared_ptr<engine::Engine> engine;
  // Numbers the set's unnamed calls (core/api.cc), which only its members make.
  mutable std::atomic<int64_t> unnamed_calls{0};

  // The set's index of global rank `global`, or -1.
  int set_rank_of(int global) const;
  // "process set 1 (ranks 0, 2)".
  std::string name() const;
};

// Makes set `id` of `ranks` (sorted, distinct, ranks of the job): on a member, connects its
// communicator (collective over the members, bounded by `deadline`) and starts its engine.
StatusOr<std::shared_ptr<ProcessSetInfo>> make_process_set(Context& context, int id,
                                                           const std::vector<int>& ranks,
                                                           int serial, Deadline deadline);

class ProcessSetTable {
 public:
  explicit ProcessSetTable(bool dynamic) : dynamic_(dynamic) {}
  ~ProcessSetTable();

  // Whether sets may be added and removed after init.
  bool dynamic() const { return dynamic_; }
  std::shared_ptr<const ProcessSetInfo> find(int id) const HORA_EXCLUDES(mu_);
  // Every set, by id.
  std::vector<std::shared_ptr<const ProcessSetInfo>> all() const HORA_EXCLUDES(mu_);
  // The set already registered with exactly these ranks, or null.
  std::shared_ptr<const ProcessSetInfo> find_ranks(const std::vector<int>& ranks) const
      HORA_EXCLUDES(mu_);
  void insert(std::shared_ptr<const ProcessSetInfo> set) HORA_EXCLUDES(mu_);
  // Unregisters `id` and stops its engine (its pending handles fail); the communicator is
  // released with the last reference. Returns the engine's error, if it had one.
  Status erase(int id) HORA_EXCLUDES(mu_);
  // Stops every set's engine and forgets them (shutdown).
  void clear() HORA_EXCLUDES(mu_);

  // The id the next set gets (ids are never reused, so an old id names no other set), and
  // the serial of the next registration (also counted for registrations that failed).
  int take_id() HORA_EXCLUDES(mu_);
  int take_serial() HORA_EXCLUDES(mu_);

 private:
  const bool dynamic_;
  mutable Mutex mu_;
  std::map<int, std::shared_ptr<const ProcessSetInfo>> sets_ HORA_GUARDED_BY(mu_);
  int next_id_ HORA_GUARDED_BY(mu_) = 1;
  int next_serial_ HORA_GUARDED_BY(mu_) = 0;
};

}  // namespace hora
