// Topology: which host each rank of a communicator is on, and what the links within and
// across hosts cost. The hierarchical algorithms (algorithms/hierarchical.h) run on its groups
// and the selector (selector.h) weighs them with its link costs.
//
// Words used here and by the hierarchical algorithms:
//   host h      the ranks whose host identity (core/base/host_identity.h) is equal; hosts are
//               numbered 0, 1, ... in the order of their lowest rank.
//   local index a rank's position among its host's ranks (ascending rank order).
//   lanes       K = the smallest number of ranks on any host. Lane j (j < K) is the ranks of
//               local index j on every host, in host order: one rank per host. A rank whose
//               local index is >= K (a host with more ranks than the smallest) is in no lane.
//
// A Topology is built once (at init, or by a benchmark) and then read-only: safe to read from
// any thread. The member lists it returns stay valid as long as it does.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "collectives/rendezvous/store.h"
#include "core/base/deadline.h"
#include "hora/status.h"

namespace hora {
namespace collectives {

class Communicator;
struct AllreduceCalibration;  // calibration.h

// One link's alpha-beta cost: time(bytes) = alpha_us + bytes * beta_us_per_byte.
struct LinkCosts {
  double alpha_us = 0;
  double beta_us_per_byte = 0;
  bool measured = false;  // false: not measured; the selector uses its table instead
};

class Topology {
 public:
  // Every rank on one host.
  static Topology single_host(int rank, int size);
  // From every rank's host identity (ids[r] for rank r). REQUIRES: 0 <= rank < ids.size().
  static Topology from_host_ids(int rank, const std::vector<std::string>& ids);

  int rank() const { return rank_; }
  int size() const { return static_cast<int>(host_of_.size()); }
  int hosts() const { return static_cast<int>(members_.size()); }
  int host_of(int rank) const { return host_of_[rank]; }
  // The ranks of host h, ascending.
  const std::vector<int>& host_members(int host) const { return members_[host]; }
  // Fewest and most ranks on one host; lanes() == min_local_size().
  int min_local_size() const;
  int max_local_size() const;
  int lanes() const { return min_local_size(); }
  // This rank's index among its host's ranks.
  int local_index() const { return local_index_; }
  // The ranks of this rank's host, ascending.
  const std::vector<int>& local_members() const { return members_[host_of_[rank_]]; }
  // The ranks of this rank's lane in host order, or empty when local_index() >= lanes().
  const std::vector<int>& lane_members() const { return lane_; }

  // The link between two ranks of one host, and between hosts (measure_links fills them).
  LinkCosts intra;
  LinkCosts cross;
  // Every allreduce candidate timed on this job's communicator at init (calibration.h); when
  // set and measured on the selector's cost model, the selector chooses from it instead of its
  // table. Null: not calibrated (one rank, HORA_CALIBRATE_MS=0).
  std::shared_ptr<const AllreduceCalibration> calibration;

 private:
  void build(int rank, const std::vector<int>& host_of);

  int rank_ = 0;
  int local_index_ = 0;
  std::vector<int> host_of_;
  std::vector<std::vector<int>> members_;
  std::vector<int> lane_;
};

// Every rank sets "<prefix><rank>" to `host_id` and reads everyone's, then builds the
// Topology. Blocks until every rank has written or `deadline` (kTimeout naming the key).
StatusOr<Topology> exchange_topology(Store& store, const std::string& prefix, int rank, int size,
                                     const std::string& host_id, Deadline deadline);

// Measures topology->cross (rank 0 with the first rank of host 1) and topology->intra (rank 0
// with the next rank of its host), each with a few ping-pongs over `comm`: alpha from the
// fastest of 16 round trips of 8 bytes, beta from the fastest of 3 of 1 MiB (after one
// warm-up), so a 10 Gbit/s link takes about 10 ms. Rank 0 publishes the figures under
// "<prefix>links" and every rank reads them, so the selector decides alike everywhere. Ranks
// outside the two measured pairs only wait for the figures. Collective over every rank of
// `comm`; blocks until `deadline`. REQUIRES: comm's ranks are topology's ranks.
Status measure_links(Communicator& comm, Store& store, const std::string& prefix,
                     Topology* topology, Deadline deadline);

}  // namespace collectives
}  // namespace hora
