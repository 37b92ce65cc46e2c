// Context: the runtime state of one initialised hora process. It owns, in this order of
// construction (and reverse order of destruction): the TcpStoreServer when this rank hosts
// the store (torchrun/mpirun/Slurm layouts, or the mpi backend without a given store: rank 0),
// the store client (a TcpStoreClient, or an in-process MemoryStore for a single process without
// a store), and the Communicator. (With the mpi backend the communicator is created first.)
//
// Start protocol (Context::create), under the store prefix "hora/init/<generation>/":
//   0. for a backend that connects without the store (mpi, over MPI_COMM_WORLD), create the
//      communicator first; when the launcher gave no store (plain `mpirun -np N prog`), rank 0
//      starts one on a free port with a fresh secret and broadcasts "addr port secret" over
//      that communicator, so mpirun users set nothing;
//   1. connect the store (retrying until HORA_START_TIMEOUT_S: the host may start late);
//   2. set "arrived/<rank>" and add 1 to "start";
//   3. wait for "arrived/0" .. "arrived/<size-1>" until HORA_START_TIMEOUT_S; on timeout the
//      error lists the ranks that never arrived;
//   4. (other backends) create the communicator of HORA_BACKEND through
//      collectives/backends/registry.h, with a PrefixStore "hora/comm/<generation>/<backend>/"
//      so communicators never share keys. HORA_BACKEND=auto means mpi under mpirun when MPI
//      is built, else the registry's first backend.
//   5. wait until every rank has its communicator;
//   6. the topology: every rank posts its host identity under "hora/topo/<generation>/";
//      when the job spans hosts and a hierarchical mode is not 0, rank 0 measures the links
//      within and across hosts (collectives::measure_links: a few ping-pongs, about 10 ms on a
//      10 Gbit/s link) and shares the figures, so every rank's selector decides alike; then
//      (more than one rank, HORA_CALIBRATE_MS > 0) every allreduce candidate is timed at a few
//      sizes on the communicator within that budget and the slowest rank's figures are agreed
//      (collectives/calibration.h), so auto chooses from this machine's measurements;
//   7. tensors in GPU memory (core/device_setup.h): the GPU runtime and, when the job uses NCCL,
//      the NCCL communicator beside the host one (HORA_BACKEND=nccl or auto: NCCL for GPU
//      tensors, the host backend -- auto's choice -- for host tensors and negotiation).
// Shutdown: when this process hosts the store, every rank sets "exit/<rank>" and the host
// waits (bounded by HORA_START_TIMEOUT_S) for all of them before it stops serving, so no rank
// loses the store while it still uses it.
//
// Threads: create/shutdown from one thread; the communicator belongs to the engine thread
// (Communicator contract). Accessors are safe from any thread.
#pragma once

#include <memory>
#include <string>

#include "collectives/backends/registry.h"
#include "collectives/communicator.h"
#include "collectives/rendezvous/store.h"
#include "collectives/rendezvous/tcp_store_server.h"
#include "collectives/topology.h"
#include "core/config.h"
#include "core/device_setup.h"
#include "core/layout.h"
#include "hora/status.h"

namespace hora {

class Context {
 public:
  // Connects, waits for every rank, creates the communicator. Blocks at most about
  // config.start_timeout_s (kTimeout naming missing ranks or store keys). `generation`
  // counts inits in this process (every rank inits the same number of times), so a second
  // init after shutdown never sees the first one's keys.
  // `process_sets`: the job will have process sets (core/process_set_table.h), so the
  // backend is set up for several communicators at once (mpi: MPI_THREAD_MULTIPLE).
  static StatusOr<std::unique_ptr<Context>> create(const Config& config, const RankLayout& layout,
                                                   int generation = 0, bool process_sets = false);
  ~Context();
  Context(const Context&) = delete;
  Context& operator=(const Context&) = delete;

  // Runs the shutdown protocol and releases everything; idempotent. The error (if any) says
  // which ranks did not reach shutdown before the store host gave up waiting.
  Status shutdown();

  const Config& config() const { return config_; }
  // The launcher's layout; except under horarun, cross_rank and cross_size come from the
  // topology (step 6), as Horovod defines them (the ranks with this local rank).
  const RankLayout& layout() const { return layout_; }
  // REQUIRES: shutdown() not yet called.
  collectives::Communicator& communicator() { return *communicator_; }
  collectives::Store& store() { return *store_; }
  // Which host each rank is on and the measured links (step 6 of start()). Read-only after
  // create.
  const collectives::Topology& topology() const { return topology_; }
  // What the job has for GPU tensors (step 7), for the engine. REQUIRES: shutdown() not yet
  // called.
  const engine::DeviceResources& device_resources() const { return device_->resources(); }
  // The host backend the communicator was made with ("builtin", "gloo", "mpi"), and the
  // options it was given, for communicators of process sets made later the same way.
  const std::string& host_backend() const { return host_backend_; }
  collectives::BackendOptions backend_options() const;
  int generation() const { return generation_; }

 private:
  // What every step of start() shares: its deadline (HORA_START_TIMEOUT_S), "rank r of n" for
  // messages, and the host backend resolved from HORA_BACKEND.
  struct StartPlan {
    Deadline deadline;
    std::string who;
    std::string backend;
  };

  Context(const Config& config, const RankLayout& layout, int generation, bool process_sets);
  // The start protocol above, steps 0-7, each step one call.
  Status start();
  // Steps 0 and 4: the communicator of plan.backend over `rendezvous`.
  Status create_communicator(collectives::Store& rendezvous, const StartPlan& plan);
  // Step 1 without a launcher's store (mpi): rank 0 starts one and shares its address over the
  // communicator; every rank connects.
  Status connect_shared_store(const StartPlan& plan);
  // Step 1 with the launcher's store: host it when this rank is to, then connect (retrying a
  // handshake cut by a previous init's store until the deadline).
  Status connect_launcher_store(const StartPlan& plan);
  // Steps 2-3: every rank arrives, or the error names those that did not.
  Status wait_for_ranks(const StartPlan& plan);
  // Step 5: every rank has its communicator.
  Status wait_for_communicators(const StartPlan& plan);
  Status discover_topology(Deadline deadline);
  // Sets topology_.calibration (step 6's last part); a no-op when HORA_CALIBRATE_MS is 0.
  Status calibrate_allreduce(Deadline deadline);

  const Config config_;
  RankLayout layout_;  // cross_rank/cross_size set by step 6 unless horarun gave them
  const int generation_;
  const bool process_sets_;
  std::string host_backend_;                                // set by start()
  std::unique_ptr<collectives::TcpStoreServer> server_;     // when layout_.hosts_store
  std::unique_ptr<collectives::Store> store_;               // the job's store
  std::unique_ptr<collectives::Store> communicator_store_;  // PrefixStore over store_
  std::unique_ptr<collectives::Communicator> communicator_;
  std::unique_ptr<DeviceSetup> device_;  // step 7; released before the store
  collectives::Topology topology_;
  bool shut_down_ = false;
};

}  // namespace hora
