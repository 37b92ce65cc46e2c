// The two GPU setups the device engine's GPU-only tests run in: device tensors staged
// through pinned host memory over `n` in-process host ranks, or native over a real NCCL
// communicator on GPU 0 at one rank (one GPU holds one NCCL rank).
#pragma once

#include <functional>

#include "collectives/backends/nccl/nccl_communicator.h"
#include "collectives/rendezvous/memory_store.h"
#include "core/base/device_runtime.h"
#include "core/config.h"
#include "core/engine/device_executor.h"
#include "core/engine/engine.h"
#include "tests/support/multi_rank.h"

namespace hora {
namespace test_support {

using EngineBody = std::function<Status(engine::Engine& eng, int rank, int size)>;

// Runs `body` on each rank's engine over `rt` (GPU 0), then stops the engine; returns the
// body's error, else the stop's.
inline Status run_gpu_engine(DeviceRuntime* rt, int n, bool nccl, const Config& config,
                             const EngineBody& body) {
  std::unique_ptr<collectives::Communicator> device_comm;
  collectives::MemoryStore store;
  if (nccl) {
    collectives::NcclOptions options;
    options.device = 0;
    auto made =
        collectives::create_nccl_communicator(0, 1, store, options, Deadline::after_seconds(60));
    if (!made.ok()) return made.status();
    device_comm = std::move(made).value();
    n = 1;
  }
  return run_ranks(n, [&](collectives::Communicator& host) -> Status {
    engine::DeviceResources res;
    res.runtime = rt;
    res.device_comm = device_comm.get();
    res.support.mode = nccl ? engine::DeviceMode::kNative : engine::DeviceMode::kStaged;
    res.support.device = 0;
    res.support.why_none.clear();
    engine::Engine eng(host, engine_options_from(config), nullptr, "", nullptr, &res);
    Status checks = body(eng, host.rank(), n);
    Status stopped = eng.stop();
    return checks.ok() ? stopped : checks;
  });
}

}  // namespace test_support
}  // namespace hora
