// Topology, SubCommunicator and the hierarchical collectives over the in-process communicator,
// with hosts made up by host identities: equal and unequal ranks per host, hosts holding
// ranks in any order, one rank per host, one host. Values are checked against the closed form
// and bit for bit across ranks (collective_checks.h); the selector's hierarchical model
// without communication.
#include "collectives/algorithms/hierarchical.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "collectives/scratch_pool.h"
#include "collectives/selector.h"
#include "collectives/sub_communicator.h"
#include "collectives/topology.h"
#include "tests/support/collective_checks.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace collectives {
namespace {

using test_support::run_ranks;

// hosts[r]: the made-up host of rank r.
struct Layout {
  const char* name;
  std::vector<int> hosts;
};

const Layout kLayouts[] = {
    {"2x2", {0, 0, 1, 1}},
    {"3+1", {0, 0, 0, 1}},
    {"1+3", {0, 1, 1, 1}},
    {"interleaved", {0, 1, 0, 1, 0, 1}},
    {"2+3+2", {0, 0, 1, 1, 1, 2, 2}},
    {"one_per_host", {0, 1, 2}},
    {"one_host", {0, 0, 0}},
    {"2+1", {0, 0, 1}},
};

Topology topology_for(const Layout& layout, int rank) {
  std::vector<std::string> ids;
  for (int h : layout.hosts) ids.push_back("host" + std::to_string(h));
  return Topology::from_host_ids(rank, ids);
}

AlgorithmOptions small_segments(ScratchPool* pool, DataType dtype, const Topology* topology) {
  AlgorithmOptions options;
  options.deadline = Deadline::after(std::chrono::seconds(30));
  options.segment_bytes = 5 * data_type_bytes(dtype);
  options.scratch = pool;
  options.topology = topology;
  return options;
}

TEST(TopologyTest, HostsLanesAndLocalIndices) {
  Topology t = Topology::from_host_ids(5, {"b", "b", "a", "a", "a", "b", "c", "c"});
  EXPECT_EQ(t.hosts(), 3);
  EXPECT_EQ(t.size(), 8);
  EXPECT_EQ(t.host_members(0), (std::vector<int>{0, 1, 5}));  // "b": host of rank 0
  EXPECT_EQ(t.host_members(1), (std::vector<int>{2, 3, 4}));
  EXPECT_EQ(t.host_members(2), (std::vector<int>{6, 7}));
  EXPECT_EQ(t.min_local_size(), 2);
  EXPECT_EQ(t.max_local_size(), 3);
  EXPECT_EQ(t.lanes(), 2);
  EXPECT_EQ(t.local_index(), 2);          // rank 5 is host 0's third rank
  EXPECT_TRUE(t.lane_members().empty());  // ... beyond the 2 lanes
  Topology u = Topology::from_host_ids(3, {"b", "b", "a", "a", "a", "b", "c", "c"});
  EXPECT_EQ(u.local_index(), 1);
  EXPECT_EQ(u.lane_members(), (std::vector<int>{1, 3, 7}));
  Topology one = Topology::single_host(2, 4);
  EXPECT_EQ(one.hosts(), 1);
  EXPECT_EQ(one.lanes(), 4);
  EXPECT_EQ(one.local_members(), (std::vector<int>{0, 1, 2, 3}));
}

TEST(SubCommunicatorTest, RenumbersAndRefusesOutOfRangePeers) {
  const std::vector<int> odd = {1, 3};
  const std::vector<int> even = {0, 2};
  Status s = run_ranks(4, [&](Communicator& comm) -> Status {
    SubCommunicator sub(comm, comm.rank() % 2 ? odd : even);
    if (sub.size() != 2 || sub.rank() != comm.rank() / 2)
      return Status::internal("sub rank " + std::to_string(sub.rank()));
    int mine = comm.rank(), theirs = -1;
    const int peer = 1 - sub.rank();
    HORA_ASSIGN_OR_RETURN(auto r, sub.irecv(peer, &theirs, sizeof(theirs), 7));
    HORA_RETURN_IF_ERROR(sub.send(peer, &mine, sizeof(mine), 7, Deadline::after_seconds(10)));
    HORA_RETURN_IF_ERROR(r->wait(Deadline::after_seconds(10)));
    if (theirs != sub.parent_rank(peer))
      return Status::internal("got " + std::to_string(theirs) + " from sub-peer " +
                              std::to_string(peer));
    auto bad = sub.isend(2, &mine, sizeof(mine), 7);
    if (bad.ok() || bad.status().code() != StatusCode::kInvalidArgument)
      return Status::internal("peer 2 of 2 was accepted");
    return Status::OK();
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

class HierarchicalTest : public ::testing::TestWithParam<Layout> {};

TEST_P(HierarchicalTest, AllreduceEveryOpInAndOutOfPlaceBitwiseEqual) {
  const Layout& layout = GetParam();
  const int n = static_cast<int>(layout.hosts.size());
  for (DataType dtype : {DataType::kFloat32, DataType::kInt32, DataType::kFloat16}) {
    for (const test_support::AllreduceCase& c :
         test_support::allreduce_cases(n, dtype, /*include_large=*/dtype == DataType::kFloat32)) {
      Status s = run_ranks(n, [&](Communicator& comm) -> Status {
        const Topology topology = topology_for(layout, comm.rank());
        ScratchPool pool;
        AlgorithmOptions options = small_segments(&pool, dtype, &topology);
        if (c.count > 100000) options.segment_bytes = AlgorithmOptions().segment_bytes;
        auto fn = [&](Communicator& cm, const void* in, void* out, size_t count, DataType dt,
                      ReduceOp op) {
          return hierarchical_allreduce(cm, topology, in, out, count, dt, op, options);
        };
        return test_support::check_allreduce(comm, fn, c, /*repeats=*/2);
      });
      ASSERT_TRUE(s.ok()) << layout.name << " " << c.name() << ": " << s.to_string();
    }
  }
}

TEST_P(HierarchicalTest, RunAllreduceTakesTheTopologyFromOptions) {
  const Layout& layout = GetParam();
  const int n = static_cast<int>(layout.hosts.size());
  test_support::AllreduceCase c;
  c.count = 4099;
  c.op = ReduceOp::kAverage;
  Status s = run_ranks(n, [&](Communicator& comm) -> Status {
    const Topology topology = topology_for(layout, comm.rank());
    ScratchPool pool;
    const AlgorithmOptions options = small_segments(&pool, c.dtype, &topology);
    auto fn = [&](Communicator& cm, const void* in, void* out, size_t count, DataType dt,
                  ReduceOp op) {
      return run_allreduce(Algorithm::kHierarchical, cm, in, out, count, dt, op, options);
    };
    return test_support::check_allreduce(comm, fn, c);
  });
  EXPECT_TRUE(s.ok()) << layout.name << ": " << s.to_string();
}

TEST_P(HierarchicalTest, AllgathervUnevenAndZeroCountsInAndOutOfPlace) {
  const Layout& layout = GetParam();
  const int n = static_cast<int>(layout.hosts.size());
  for (DataType dtype : {DataType::kUint8, DataType::kFloat64}) {
    for (size_t base : {size_t{0}, size_t{1}, size_t{41}}) {
      std::vector<size_t> counts(n);
      for (int k = 0; k < n; ++k) counts[k] = (k % 3 == 1) ? 0 : base + 3 * k;
      for (bool in_place : {false, true}) {
        Status s = run_ranks(n, [&](Communicator& comm) -> Status {
          const Topology topology = topology_for(layout, comm.rank());
          ScratchPool pool;
          const AlgorithmOptions options = small_segments(&pool, dtype, &topology);
          auto fn = [&](Communicator& cm, const void* in, void* out, const std::vector<size_t>& cs,
                        DataType dt) {
            return hierarchical_allgatherv(cm, topology, in, out, cs, dt, options);
          };
          return test_support::check_allgatherv(comm, fn, counts, dtype, in_place);
        });
        ASSERT_TRUE(s.ok()) << layout.name << " base " << base << (in_place ? " in place" : "")
                            << ": " << s.to_string();
      }
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Layouts, HierarchicalTest, ::testing::ValuesIn(kLayouts),
                         [](const ::testing::TestParamInfo<Layout>& info) {
                           std::string name = info.param.name;
                           for (char& ch : name)
                             if (ch == '+') ch = 'p';
                           return name;
                         });

TEST(HierarchicalTest, TopologyOfAnotherCommunicatorIsRefused) {
  Status s = run_ranks(2, [&](Communicator& comm) -> Status {
    const Topology wrong = Topology::single_host(comm.rank(), 3);
    float x = 1;
    AlgorithmOptions options;
    Status st =
        hierarchical_allreduce(comm, wrong, &x, &x, 1, DataType::kFloat32, ReduceOp::kSum, options);
    if (st.code() != StatusCode::kInvalidArgument || st.message().find("of 3") == std::string::npos)
      return Status::internal("expected kInvalidArgument naming 3 ranks, got " + st.to_string());
    return Status::OK();
  });
  EXPECT_TRUE(s.ok()) << s.to_string();
}

// Two hosts of two ranks: shared memory within a host at 5 GB/s after 5 us, and a link of
// `cross_gbs` GB/s after `cross_alpha_us` between them.
Topology two_by_two(double cross_gbs, double cross_alpha_us = 50.0) {
  Topology t = Topology::from_host_ids(0, {"a", "a", "b", "b"});
  t.intra = LinkCosts{5.0, 1.0 / (5.0 * 1000), true};
  t.cross = LinkCosts{cross_alpha_us, 1.0 / (cross_gbs * 1000), true};
  return t;
}

TEST(HierarchicalSelectorTest, ParsesAndNamesHierarchical) {
  auto parsed = parse_algorithm("hierarchical");
  ASSERT_TRUE(parsed.ok());
  EXPECT_EQ(parsed.value(), Algorithm::kHierarchical);
  EXPECT_STREQ(algorithm_name(Algorithm::kHierarchical), "hierarchical");
  EXPECT_LT(estimate_allreduce_us(Algorithm::kHierarchical, "builtin", 1 << 20, 4), 0);
}

TEST(HierarchicalSelectorTest, SlowCrossLinkLargeMessagesPickHierarchical) {
  const Topology t = two_by_two(1.25);  // 10 Gbit/s
  for (size_t bytes : {size_t{16} << 20, size_t{64} << 20, size_t{256} << 20}) {
    const Selection s = select_allreduce(bytes, 4, "builtin", Algorithm::kAuto, &t);
    EXPECT_EQ(s.algorithm, Algorithm::kHierarchical) << bytes;
    // The model's reason: the ring sends 1.5 buffers over the link, hierarchical 1 (both
    // reduce 3/4 of the buffer per rank, which the table's gamma makes a large common term).
    const double ring = estimate_allreduce_us(Algorithm::kRing, "builtin", bytes, t);
    const double hier = estimate_allreduce_us(Algorithm::kHierarchical, "builtin", bytes, t);
    EXPECT_GT(ring / hier, 1.05) << bytes;
  }
}

// At the ends of the size range: between them the model may still prefer it, as a
// reduce-scatter / allgather that reduces less than recursive doubling does.
TEST(HierarchicalSelectorTest, LinkNoSlowerThanSharedMemoryKeepsFlat) {
  Topology t = two_by_two(5.0, 5.0);  // the cross link costs what shared memory does
  for (size_t bytes : {size_t{8}, size_t{256} << 20})
    EXPECT_NE(select_allreduce(bytes, 4, "builtin", Algorithm::kAuto, &t).algorithm,
              Algorithm::kHierarchical)
        << bytes;
}

TEST(HierarchicalSelectorTest, OneHostNeverOffersIt) {
  const Topology t = two_by_two(1.25);
  const Topology one = Topology::single_host(0, 4);
  for (const Selection& s : explain_allreduce(64 << 20, 4, "builtin", &one))
    EXPECT_NE(s.algorithm, Algorithm::kHierarchical);
  // Without a topology the candidates are the flat four, as before.
  EXPECT_EQ(explain_allreduce(64 << 20, 4, "builtin").size(), 4u);
  EXPECT_EQ(explain_allreduce(64 << 20, 4, "builtin", &t).size(), 5u);
}

TEST(HierarchicalSelectorTest, OverrideWithTopologyIsKept) {
  const Topology t = two_by_two(1.25);
  const Selection s = select_allreduce(8, 4, "builtin", Algorithm::kHierarchical, &t);
  EXPECT_EQ(s.algorithm, Algorithm::kHierarchical);
  EXPECT_TRUE(s.is_override);
  EXPECT_GT(s.estimated_us, 0);
}

}  // namespace
}  // namespace collectives
}  // namespace hora
