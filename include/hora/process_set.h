// ProcessSet: a group of the job's ranks that runs collectives among themselves, as Horovod's
// hvd.ProcessSet. The job's ranks form the global set (id 0, kGlobalProcessSet); further sets
// are made at init (InitOptions::process_sets) or, in a job started with dynamic process sets,
// by add_process_set (hora/hora.h), and each collective call takes the id of the set it runs
// on (0, the global set, by default).
//
// A ProcessSet is a plain value: the sorted ranks, and the id the job gave it (-1 for one not
// registered yet). Ranks are global ranks (hora::rank()); within the set, rank i of the set is
// ranks()[i]. Each registered set has a communicator and an engine of its own on its members
// (docs/architecture.md, "Process sets"), so sets negotiate and run independently.
#pragma once

#include <vector>

namespace hora {

// The id of the global process set: every rank of the job.
constexpr int kGlobalProcessSet = 0;

class ProcessSet {
 public:
  // An empty, unregistered set (id -1).
  ProcessSet() = default;
  // The set of `ranks`, in any order (kept sorted, as Horovod does); not registered (id -1).
  // Duplicates and ranks outside the job are refused when it is registered.
  explicit ProcessSet(std::vector<int> ranks);

  // The id the job gave the set (0 for the global one), or -1 when not registered.
  int id() const { return id_; }
  // The member ranks, sorted.
  const std::vector<int>& ranks() const { return ranks_; }
  int size() const { return static_cast<int>(ranks_.size()); }
  // This process's index in the set, or -1 when it is not a member (or hora is not
  // initialised).
  int rank() const;
  // Whether this process is a member.
  bool included() const { return rank() >= 0; }
  // The set's index of global rank `global_rank`, or -1 when that rank is not a member.
  int rank_of(int global_rank) const;

  bool operator==(const ProcessSet& other) const {
    return id_ == other.id_ && ranks_ == other.ranks_;
  }

 private:
  friend struct ProcessSetAccess;
  int id_ = -1;
  std::vector<int> ranks_;
};

}  // namespace hora
