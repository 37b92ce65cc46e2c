// The backend registry's choices that need no communication: what "auto" means in a job that
// mpirun started, and which backend connects without a store (core/context.cc creates that
// one first and shares the store's address over it).
#include "collectives/backends/registry.h"

#include <gtest/gtest.h>

namespace hora {
namespace collectives {
namespace {

TEST(Registry, AutoUnderMpirunIsMpiWhenBuilt) {
  const std::string expected = backend_available("mpi") ? "mpi" : resolve_backend_name("auto");
  EXPECT_EQ(resolve_backend_name_for_job("auto", /*launched_by_mpirun=*/true), expected);
}

TEST(Registry, AutoOutsideMpirunIsTheFirstAvailableBackend) {
  EXPECT_EQ(resolve_backend_name_for_job("auto", /*launched_by_mpirun=*/false),
            available_backends().front());
}

TEST(Registry, ANamedBackendWinsUnderMpirun) {
  for (const char* name : {"builtin", "gloo", "mpi", "nccl"}) {
    EXPECT_EQ(resolve_backend_name_for_job(name, true), name);
    EXPECT_EQ(resolve_backend_name_for_job(name, false), name);
  }
}

TEST(Registry, OnlyMpiConnectsWithoutAStore) {
  EXPECT_EQ(backend_connects_without_store("mpi"), backend_available("mpi"));
  EXPECT_FALSE(backend_connects_without_store("builtin"));
  EXPECT_FALSE(backend_connects_without_store("gloo"));
  EXPECT_FALSE(backend_connects_without_store("nccl"));
  EXPECT_FALSE(backend_connects_without_store("no-such-backend"));
}

}  // namespace
}  // namespace collectives
}  // namespace hora
