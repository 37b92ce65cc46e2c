// Across real hosts (network namespaces, tests/multihost/): the rank layout hora reports is
// true (local ranks per host; cross ranks as Horovod defines them: among the ranks with the
// same local rank, one per host that has that many), the topology found at init matches it, the
// links were measured, and the hierarchical collectives give closed-form, bitwise identical results
// on every rank, through the algorithms and through the engine. HORA_TEST_EXPECT_HOSTS (set by
// CMake) is the number of hosts the job was started on, so a job that silently ran on one host
// fails.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "collectives/algorithms/hierarchical.h"
#include "collectives/selector.h"
#include "core/base/host_identity.h"
#include "core/context.h"
#include "core/context_access.h"
#include "hora/hora.h"
#include "tests/mp/mp_env.h"
#include "tests/support/collective_checks.h"

namespace hora {
namespace {

using collectives::Communicator;
using collectives::Topology;

// One rank's view of where it is, as fixed-size text fields.
struct Record {
  char hostname[64];
  char identity[160];
  int32_t local_rank, local_size, cross_rank, cross_size;
};

const Topology& topology() { return detail::context()->topology(); }

int expected_hosts() {
  const char* v = std::getenv("HORA_TEST_EXPECT_HOSTS");
  return v != nullptr ? std::atoi(v) : 0;
}

TEST(TopologyMp, LayoutIsTrueAcrossHosts) {
  Communicator& comm = mp::mp_communicator();
  const int n = comm.size();
  Record mine;
  std::memset(&mine, 0, sizeof(mine));
  gethostname(mine.hostname, sizeof(mine.hostname) - 1);
  std::strncpy(mine.identity, host_identity().c_str(), sizeof(mine.identity) - 1);
  mine.local_rank = local_rank();
  mine.local_size = local_size();
  mine.cross_rank = cross_rank();
  mine.cross_size = cross_size();
  std::vector<Record> all(static_cast<size_t>(n));
  collectives::AlgorithmOptions options;
  options.deadline = mp::mp_deadline();
  ASSERT_TRUE(collectives::ring_allgatherv(comm, &mine, all.data(),
                                           std::vector<size_t>(n, sizeof(Record)), DataType::kUint8,
                                           options)
                  .ok());
  std::map<std::string, std::vector<int>> by_identity;
  std::set<std::string> hostnames;
  for (int r = 0; r < n; ++r) {
    by_identity[all[r].identity].push_back(r);
    hostnames.insert(all[r].hostname);
  }
  if (expected_hosts() > 0) {
    EXPECT_EQ(static_cast<int>(by_identity.size()), expected_hosts());
    EXPECT_EQ(static_cast<int>(hostnames.size()), expected_hosts());
  }
  // Hosts in order of their lowest rank; Horovod's cross group of a rank: the hosts with more
  // ranks than its local rank.
  std::vector<std::vector<int>> hosts;
  for (int r = 0; r < n; ++r) {
    const std::vector<int>& ranks = by_identity[all[r].identity];
    if (ranks[0] == r) hosts.push_back(ranks);
  }
  for (size_t h = 0; h < hosts.size(); ++h) {
    const std::vector<int>& ranks = hosts[h];
    std::set<int> locals;
    for (int r : ranks) {
      const Record& x = all[r];
      EXPECT_EQ(x.local_size, static_cast<int>(ranks.size())) << "rank " << r;
      EXPECT_EQ(std::string(x.hostname), std::string(all[ranks[0]].hostname));
      locals.insert(x.local_rank);
      int cross_rank = 0, cross_size = 0;
      for (size_t g = 0; g < hosts.size(); ++g) {
        if (static_cast<int>(hosts[g].size()) <= x.local_rank) continue;
        if (g < h) ++cross_rank;
        ++cross_size;
      }
      EXPECT_EQ(x.cross_rank, cross_rank) << "rank " << r;
      EXPECT_EQ(x.cross_size, cross_size) << "rank " << r;
    }
    EXPECT_EQ(static_cast<int>(locals.size()), static_cast<int>(ranks.size()));
    EXPECT_EQ(*locals.begin(), 0);
    EXPECT_EQ(*locals.rbegin(), static_cast<int>(ranks.size()) - 1);
  }
  // The topology found at init agrees with the layout.
  const Topology& t = topology();
  EXPECT_EQ(t.hosts(), static_cast<int>(hosts.size()));
  EXPECT_EQ(static_cast<int>(t.local_members().size()), local_size());
  EXPECT_EQ(t.local_index(), local_rank());
  if (t.hosts() > 1) {
    EXPECT_TRUE(t.cross.measured);
    EXPECT_GT(t.cross.alpha_us, 0);
    std::printf("rank %d: link across hosts %.1f us + %.3f GB/s; within %.1f us + %.3f GB/s\n",
                comm.rank(), t.cross.alpha_us, 1e-3 / std::max(t.cross.beta_us_per_byte, 1e-12),
                t.intra.alpha_us, 1e-3 / std::max(t.intra.beta_us_per_byte, 1e-12));
  }
}

collectives::AlgorithmOptions options_for(collectives::ScratchPool* pool, size_t segment_bytes) {
  collectives::AlgorithmOptions options;
  options.deadline = mp::mp_deadline();
  options.scratch = pool;
  options.segment_bytes = segment_bytes;
  options.topology = &topology();
  return options;
}

TEST(TopologyMp, HierarchicalAllreduceClosedFormAndBitwiseEqual) {
  Communicator& comm = mp::mp_communicator();
  collectives::ScratchPool pool;
  for (DataType dtype : {DataType::kFloat32, DataType::kInt64, DataType::kBFloat16}) {
    for (const test_support::AllreduceCase& c :
         test_support::allreduce_cases(comm.size(), dtype, dtype == DataType::kFloat32)) {
      const auto options = options_for(&pool, c.count > 100000 ? 512 * 1024 : 64);
      auto fn = [&](Communicator& cm, const void* in, void* out, size_t count, DataType dt,
                    ReduceOp op) {
        return collectives::hierarchical_allreduce(cm, topology(), in, out, count, dt, op, options);
      };
      Status s = test_support::check_allreduce(comm, fn, c, /*repeats=*/2);
      ASSERT_TRUE(s.ok()) << c.name() << ": " << s.to_string();
    }
  }
}

TEST(TopologyMp, HierarchicalAllgathervClosedForm) {
  Communicator& comm = mp::mp_communicator();
  collectives::ScratchPool pool;
  const auto options = options_for(&pool, 96);
  std::vector<size_t> counts(comm.size());
  for (int r = 0; r < comm.size(); ++r) counts[r] = (r % 3 == 1) ? 0 : 1000 + 7 * r;
  for (bool in_place : {false, true}) {
    auto fn = [&](Communicator& cm, const void* in, void* out, const std::vector<size_t>& cs,
                  DataType dt) {
      return collectives::hierarchical_allgatherv(cm, topology(), in, out, cs, dt, options);
    };
    Status s = test_support::check_allgatherv(comm, fn, counts, DataType::kFloat32, in_place);
    ASSERT_TRUE(s.ok()) << (in_place ? "in place: " : "") << s.to_string();
  }
}

TEST(TopologyMp, SelectorWithMeasuredLinksRunsWhatItPicks) {
  Communicator& comm = mp::mp_communicator();
  collectives::ScratchPool pool;
  const auto options = options_for(&pool, 512 * 1024);
  for (size_t count : {size_t{2}, size_t{1} << 16, (size_t{4} << 20) + 1}) {
    test_support::AllreduceCase c;
    c.count = count;
    auto fn = [&](Communicator& cm, const void* in, void* out, size_t n, DataType dt, ReduceOp op) {
      return collectives::run_allreduce(collectives::Algorithm::kAuto, cm, in, out, n, dt, op,
                                        options);
    };
    Status s = test_support::check_allreduce(comm, fn, c);
    ASSERT_TRUE(s.ok()) << count << ": " << s.to_string();
  }
}

}  // namespace
}  // namespace hora
