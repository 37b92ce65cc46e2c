// The NCCL unique id's trip through hora's stores (MemoryStore, FileStore, a PrefixStore per
// communicator), NCCL's result codes as Status, and hora's dtypes and ops in NCCL's terms.
// No GPU needed: the id comes from the fake, the rest is pure.
#include "collectives/backends/nccl/nccl_unique_id.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstring>
#include <thread>
#include <vector>

#include "collectives/backends/nccl/nccl_status.h"
#include "collectives/backends/nccl/nccl_types.h"
#include "collectives/rendezvous/file_store.h"
#include "collectives/rendezvous/memory_store.h"
#include "collectives/rendezvous/prefix_store.h"
#include "tests/collectives/backends/nccl/fake_nccl_api.h"

namespace hora {
namespace collectives {
namespace nccl_test {
namespace {

using nccl_backend::exchange_unique_id;

// Every rank of `size` exchanges through `store` on its own thread; all must hold rank 0's id.
void expect_every_rank_gets_rank_zeros_id(Store& store, int size) {
  FakeNcclApi api;
  ncclUniqueId expected;
  api.get_unique_id(&expected);
  std::vector<StatusOr<ncclUniqueId>> ids(size, Status::internal("not run"));
  std::vector<std::thread> threads;
  for (int r = size - 1; r >= 0; --r) {  // rank 0 last: the others must wait for it
    threads.emplace_back([&, r] {
      FakeNcclApi own;
      ids[r] = exchange_unique_id(own, store, r, size, Deadline::after_seconds(10));
    });
  }
  for (auto& t : threads) t.join();
  for (int r = 0; r < size; ++r) {
    ASSERT_TRUE(ids[r].ok()) << "rank " << r << ": " << ids[r].status().to_string();
    EXPECT_EQ(std::memcmp(ids[r].value().internal, expected.internal, sizeof expected.internal), 0)
        << "rank " << r;
  }
}

TEST(NcclUniqueId, TravelsThroughAMemoryStore) {
  MemoryStore store;
  expect_every_rank_gets_rank_zeros_id(store, 4);
}

TEST(NcclUniqueId, TravelsThroughAFileStore) {
  char dir[] = "/tmp/hora_nccl_id_XXXXXX";
  ASSERT_NE(::mkdtemp(dir), nullptr);
  auto store = FileStore::open(dir);
  ASSERT_TRUE(store.ok()) << store.status().to_string();
  expect_every_rank_gets_rank_zeros_id(*store.value(), 3);
}

TEST(NcclUniqueId, CommunicatorsWithTheirOwnPrefixDoNotMeet) {
  MemoryStore base;
  PrefixStore first("hora/comm/0/nccl", base);
  PrefixStore second("hora/comm/1/nccl", base);
  FakeNcclApi api;
  ASSERT_TRUE(exchange_unique_id(api, first, 0, 2, Deadline::after_seconds(1)).ok());
  auto other =
      exchange_unique_id(api, second, 1, 2, Deadline::after(std::chrono::milliseconds(50)));
  ASSERT_FALSE(other.ok());
  EXPECT_EQ(other.status().code(), StatusCode::kTimeout);
  EXPECT_NE(other.status().message().find("rank 0's NCCL unique id"), std::string::npos)
      << other.status().message();
}

TEST(NcclUniqueId, AValueOfTheWrongSizeIsAMismatch) {
  MemoryStore store;
  ASSERT_TRUE(store.set(nccl_backend::kUniqueIdKey, Bytes(16, 1)).ok());
  FakeNcclApi api;
  auto id = exchange_unique_id(api, store, 2, 3, Deadline::after_seconds(1));
  ASSERT_FALSE(id.ok());
  EXPECT_EQ(id.status().code(), StatusCode::kMismatch);
  EXPECT_NE(id.status().message().find("16 bytes; expected 128"), std::string::npos)
      << id.status().message();
}

TEST(NcclStatus, MapsEveryResult) {
  using nccl_backend::nccl_status;
  EXPECT_TRUE(nccl_status(ncclSuccess, "x").ok());
  EXPECT_EQ(nccl_status(ncclRemoteError, "x").code(), StatusCode::kRemote);
  EXPECT_EQ(nccl_status(ncclInvalidArgument, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(nccl_status(ncclInvalidUsage, "x").code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(nccl_status(ncclSystemError, "x").code(), StatusCode::kIo);
  EXPECT_EQ(nccl_status(ncclUnhandledCudaError, "x").code(), StatusCode::kInternal);
  EXPECT_EQ(nccl_status(ncclInternalError, "x").code(), StatusCode::kInternal);
  EXPECT_EQ(nccl_status(ncclInProgress, "x").code(), StatusCode::kInternal);
  Status s = nccl_status(ncclRemoteError, "rank 1 of 2: allreduce", "peer 0 closed");
  EXPECT_EQ(s.message(), "rank 1 of 2: allreduce: NCCL error 6 (ncclRemoteError): peer 0 closed");
}

TEST(NcclTypes, ReductionTypesAndOps) {
  using nccl_backend::nccl_reduce_op;
  using nccl_backend::nccl_reduce_type;
  EXPECT_EQ(nccl_reduce_type(DataType::kUint8).value(), ncclUint8);
  EXPECT_EQ(nccl_reduce_type(DataType::kInt8).value(), ncclInt8);
  EXPECT_EQ(nccl_reduce_type(DataType::kInt32).value(), ncclInt32);
  EXPECT_EQ(nccl_reduce_type(DataType::kInt64).value(), ncclInt64);
  EXPECT_EQ(nccl_reduce_type(DataType::kFloat16).value(), ncclFloat16);
  EXPECT_EQ(nccl_reduce_type(DataType::kBFloat16).value(), ncclBfloat16);
  EXPECT_EQ(nccl_reduce_type(DataType::kFloat32).value(), ncclFloat32);
  EXPECT_EQ(nccl_reduce_type(DataType::kFloat64).value(), ncclFloat64);
  for (DataType dtype : {DataType::kInt16, DataType::kUint16, DataType::kBool}) {
    auto type = nccl_reduce_type(dtype);
    ASSERT_FALSE(type.ok());
    EXPECT_EQ(type.status().code(), StatusCode::kUnimplemented);
    EXPECT_NE(type.status().message().find(data_type_name(dtype)), std::string::npos);
    EXPECT_NE(type.status().message().find("HORA_ALLREDUCE_ALGO"), std::string::npos);
  }
  EXPECT_EQ(nccl_reduce_op(ReduceOp::kSum), ncclSum);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::kAverage), ncclSum);  // scaled by hora afterwards
  EXPECT_EQ(nccl_reduce_op(ReduceOp::kMin), ncclMin);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::kMax), ncclMax);
  EXPECT_EQ(nccl_reduce_op(ReduceOp::kProduct), ncclProd);
}

}  // namespace
}  // namespace nccl_test
}  // namespace collectives
}  // namespace hora
