#include "collectives/topology.h"

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <map>
#include <sstream>

#include "collectives/communicator.h"

namespace hora {
namespace collectives {
namespace {

using Clock = std::chrono::steady_clock;

// Message tag of the link probe ("prob"): no collective uses it, so a probe never matches one.
constexpr uint32_t kProbeTag = 0x70726f62;
constexpr int kSmallRounds = 16;
constexpr size_t kSmallBytes = 8;
constexpr int kLargeRounds = 4;  // the first is a warm-up (buffers, TCP window)
constexpr size_t kLargeBytes = size_t{1} << 20;

// The initiator's side of one ping-pong: sends `bytes` to `peer` and waits for them back.
// Returns the round trip in microseconds.
StatusOr<double> ping(Communicator& comm, int peer, std::vector<uint8_t>& buf, size_t bytes,
                      Deadline deadline) {
  const auto start = Clock::now();
  HORA_RETURN_IF_ERROR(comm.send(peer, buf.data(), bytes, kProbeTag, deadline));
  HORA_RETURN_IF_ERROR(comm.recv(peer, buf.data(), bytes, kProbeTag, deadline));
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// Rank 0's side of one pair: alpha from the fastest small round trip, beta from the fastest
// large one (one way = half a round trip).
StatusOr<LinkCosts> measure_pair(Communicator& comm, int peer, Deadline deadline) {
  std::vector<uint8_t> buf(kLargeBytes, 0x5a);
  double small_us = 1e30, large_us = 1e30;
  for (int i = 0; i < kSmallRounds; ++i) {
    HORA_ASSIGN_OR_RETURN(double rtt, ping(comm, peer, buf, kSmallBytes, deadline));
    small_us = std::min(small_us, rtt);
  }
  for (int i = 0; i < kLargeRounds; ++i) {
    HORA_ASSIGN_OR_RETURN(double rtt, ping(comm, peer, buf, kLargeBytes, deadline));
    if (i > 0) large_us = std::min(large_us, rtt);
  }
  LinkCosts c;
  c.alpha_us = small_us / 2;
  c.beta_us_per_byte = std::max(0.0, large_us / 2 - c.alpha_us) / static_cast<double>(kLargeBytes);
  c.measured = true;
  return c;
}

// The partner's side: echoes every message back.
Status echo_pair(Communicator& comm, Deadline deadline) {
  std::vector<uint8_t> buf(kLargeBytes);
  for (int i = 0; i < kSmallRounds + kLargeRounds; ++i) {
    const size_t bytes = i < kSmallRounds ? kSmallBytes : kLargeBytes;
    HORA_RETURN_IF_ERROR(comm.recv(0, buf.data(), bytes, kProbeTag, deadline));
    HORA_RETURN_IF_ERROR(comm.send(0, buf.data(), bytes, kProbeTag, deadline));
  }
  return Status::OK();
}

std::string format_link(const LinkCosts& c) {
  char text[96];
  std::snprintf(text, sizeof(text), "%d %.17g %.17g", c.measured ? 1 : 0, c.alpha_us,
                c.beta_us_per_byte);
  return text;
}

bool parse_link(std::istringstream& in, LinkCosts* c) {
  int measured = 0;
  if (!(in >> measured >> c->alpha_us >> c->beta_us_per_byte)) return false;
  c->measured = measured != 0;
  return true;
}

}  // namespace

Topology Topology::single_host(int rank, int size) {
  Topology t;
  t.build(rank, std::vector<int>(static_cast<size_t>(size), 0));
  return t;
}

Topology Topology::from_host_ids(int rank, const std::vector<std::string>& ids) {
  std::map<std::string, int> index;  // host id -> host number, by lowest rank
  std::vector<int> host_of(ids.size());
  for (size_t r = 0; r < ids.size(); ++r) {
    auto it = index.emplace(ids[r], static_cast<int>(index.size())).first;
    host_of[r] = it->second;
  }
  Topology t;
  t.build(rank, host_of);
  return t;
}

void Topology::build(int rank, const std::vector<int>& host_of) {
  rank_ = rank;
  host_of_ = host_of;
  int hosts = 0;
  for (int h : host_of_) hosts = std::max(hosts, h + 1);
  members_.assign(static_cast<size_t>(hosts), {});
  for (int r = 0; r < static_cast<int>(host_of_.size()); ++r) members_[host_of_[r]].push_back(r);
  const std::vector<int>& mine = members_[host_of_[rank_]];
  local_index_ = static_cast<int>(std::find(mine.begin(), mine.end(), rank_) - mine.begin());
  lane_.clear();
  if (local_index_ < lanes()) {
    for (const std::vector<int>& m : members_) lane_.push_back(m[local_index_]);
  }
}

int Topology::min_local_size() const {
  size_t n = members_.empty() ? 0 : members_[0].size();
  for (const auto& m : members_) n = std::min(n, m.size());
  return static_cast<int>(n);
}

int Topology::max_local_size() const {
  size_t n = 0;
  for (const auto& m : members_) n = std::max(n, m.size());
  return static_cast<int>(n);
}

StatusOr<Topology> exchange_topology(Store& store, const std::string& prefix, int rank, int size,
                                     const std::string& host_id, Deadline deadline) {
  if (size < 1 || rank < 0 || rank >= size)
    return Status::invalid_argument("exchange_topology: rank " + std::to_string(rank) +
                                    " of size " + std::to_string(size) + " is out of range");
  HORA_RETURN_IF_ERROR(
      store.set(prefix + std::to_string(rank), Bytes(host_id.begin(), host_id.end())));
  std::vector<std::string> ids(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) {
    auto v = store.get(prefix + std::to_string(r), deadline);
    if (!v.ok())
      return v.status().with_context(" (rank " + std::to_string(rank) +
                                     " reading the host identity of rank " + std::to_string(r) +
                                     ")");
    ids[r].assign(v.value().begin(), v.value().end());
  }
  return Topology::from_host_ids(rank, ids);
}

Status measure_links(Communicator& comm, Store& store, const std::string& prefix,
                     Topology* topology, Deadline deadline) {
  const int rank = comm.rank();
  const std::vector<int>& host0 = topology->host_members(0);
  const int intra_peer = host0.size() > 1 ? host0[1] : -1;
  const int cross_peer = topology->hosts() > 1 ? topology->host_members(1)[0] : -1;
  const std::string key = prefix + "links";
  if (rank == 0) {
    LinkCosts intra, cross;
    if (intra_peer >= 0) {
      HORA_ASSIGN_OR_RETURN(intra, measure_pair(comm, intra_peer, deadline));
    }
    if (cross_peer >= 0) {
      HORA_ASSIGN_OR_RETURN(cross, measure_pair(comm, cross_peer, deadline));
    }
    const std::string text = format_link(intra) + " " + format_link(cross);
    HORA_RETURN_IF_ERROR(store.set(key, Bytes(text.begin(), text.end())));
  } else if (rank == intra_peer || rank == cross_peer) {
    HORA_RETURN_IF_ERROR(echo_pair(comm, deadline));
  }
  HORA_ASSIGN_OR_RETURN(Bytes value, store.get(key, deadline));
  std::istringstream in(std::string(value.begin(), value.end()));
  if (!parse_link(in, &topology->intra) || !parse_link(in, &topology->cross))
    return Status::internal("rank " + std::to_string(rank) + ": malformed link figures '" +
                            std::string(value.begin(), value.end()) + "' under " + key);
  return Status::OK();
}

}  // namespace collectives
}  // namespace hora
