#include "core/context.h"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "collectives/backends/registry.h"
#include "collectives/calibration.h"
#include "collectives/failed_ranks.h"
#include "collectives/rendezvous/memory_store.h"
#include "collectives/rendezvous/prefix_store.h"
#include "collectives/rendezvous/tcp_store_client.h"
#include "core/base/host_identity.h"
#include "hora/logging.h"

namespace hora {
namespace {

// The largest shared-memory fusion buffer a builtin communicator pre-faults per rank. Larger
// buckets fuse in private memory (one copy more); the cap keeps N ranks within a small
// /dev/shm (container defaults are 64 MiB).
constexpr int64_t kMaxSharedBuffer = int64_t{16} << 20;

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

// Ranks r in [0, size) whose "<prefix><r>" key is absent (checked one by one).
std::vector<int> missing_ranks(collectives::Store& store, const std::string& prefix, int size) {
  std::vector<int> missing;
  for (int r = 0; r < size; ++r) {
    auto present = store.check({prefix + std::to_string(r)});
    if (!present.ok() || !present.value()) missing.push_back(r);
  }
  return missing;
}

std::vector<std::string> rank_keys(const std::string& prefix, int size) {
  std::vector<std::string> keys;
  keys.reserve(static_cast<size_t>(size));
  for (int r = 0; r < size; ++r) keys.push_back(prefix + std::to_string(r));
  return keys;
}

// Waits until every rank's "<prefix><r>" key is in `store`, except the ranks this process
// knows failed (collectives/failed_ranks.h), which never come: checked again every 200 ms,
// so a rank found failed during the wait stops being waited for at once.
Status wait_for_live_ranks(collectives::Store& store, const std::string& prefix, int size,
                           Deadline deadline) {
  collectives::FailedRanks& failed = collectives::FailedRanks::process();
  const auto started = std::chrono::steady_clock::now();
  for (;;) {
    std::vector<std::string> keys;
    keys.reserve(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r)
      if (!failed.contains(r)) keys.push_back(prefix + std::to_string(r));
    const Deadline slice(std::min(deadline.at(), Deadline::after_seconds(0.2).at()));
    Status all = store.wait(keys, slice);
    if (all.ok() || all.code() != StatusCode::kTimeout || deadline.expired()) return all;
    failed.poll_store(std::chrono::steady_clock::now() - started);
  }
}

// "2", "0.5": seconds as a person would write them.
std::string seconds_text(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

// Where a store that init hosts itself can be reached: "addr port secret".
struct StoreAddress {
  std::string addr;
  int port = 0;
  std::string secret;
};

// The context added to a failed connection to the rendezvous store at addr:port.
std::string store_connect_context(const std::string& who, const std::string& addr, int port,
                                  const char* whose) {
  return " (hora init: " + who + " connecting the store at " + addr + ":" + std::to_string(port) +
         whose + " within HORA_START_TIMEOUT_S)";
}

// Rendezvous through the communicator, for a backend that connected without a store (mpi):
//   1. rank 0 starts a TcpStoreServer on a port the OS picks, with a fresh secret, bound to
//      loopback when every rank is on its host (local size == size), else to all interfaces
//      and advertised at its first external IPv4 address;
//   2. rank 0 broadcasts the length of "addr port secret" (0 when step 1 failed, so the others
//      fail too instead of waiting), then the text;
//   3. every rank parses it.
// `server` receives rank 0's server. Blocks until `deadline` (the communicator's broadcast).
StatusOr<StoreAddress> share_store_address(collectives::Communicator& comm, const RankLayout& l,
                                           Deadline deadline,
                                           std::unique_ptr<collectives::TcpStoreServer>* server) {
  std::string text;
  Status host_status;
  if (comm.rank() == 0) {
    const bool local_job = l.local_size == l.size;
    StoreAddress a;
    a.addr = local_job ? "127.0.0.1" : first_external_ipv4();
    auto secret = generate_secret();
    if (a.addr.empty()) {
      host_status = Status::io(
          "rank 0 has no external IPv4 address for the store of a multi-host job; set "
          "HORA_RENDEZVOUS_ADDR and HORA_RENDEZVOUS_PORT");
    } else if (!secret.ok()) {
      host_status = secret.status();
    } else {
      collectives::TcpStoreServer::Options options;
      options.bind_address = local_job ? "127.0.0.1" : "0.0.0.0";
      options.port = 0;
      options.secret = secret.value();
      auto started = collectives::TcpStoreServer::start(options);
      if (started.ok()) {
        *server = std::move(started).value();
        text = a.addr + " " + std::to_string((*server)->port()) + " " + secret.value();
      } else {
        host_status = started.status();
      }
    }
  }
  int64_t length = static_cast<int64_t>(text.size());
  HORA_RETURN_IF_ERROR(comm.broadcast(&length, 1, DataType::kInt64, 0, deadline));
  if (length == 0) {
    if (!host_status.ok()) return host_status.with_context(" (rank 0 starting the store)");
    return Status::remote("rank 0 could not start the rendezvous store (its log says why)");
  }
  if (length > 4096)
    return Status::internal("rank 0 sent a store address of " + std::to_string(length) +
                            " bytes; expected at most 4096");
  text.resize(static_cast<size_t>(length));
  HORA_RETURN_IF_ERROR(comm.broadcast(text.data(), text.size(), DataType::kUint8, 0, deadline));
  std::istringstream in(text);
  StoreAddress a;
  if (!(in >> a.addr >> a.port >> a.secret) || a.port < 1 || a.port > 65535)
    return Status::internal("rank 0 sent a malformed store address '" + a.addr + " " +
                            std::to_string(a.port) + " ...'; expected 'addr port secret'");
  return a;
}

}  // namespace

Context::Context(const Config& config, const RankLayout& layout, int generation, bool process_sets)
    : config_(config), layout_(layout), generation_(generation), process_sets_(process_sets) {}

Context::~Context() {
  Status status = shutdown();
  if (!status.ok()) {
    HORA_LOG(kWarning) << "hora shutdown: " << status.to_string();
  }
}

StatusOr<std::unique_ptr<Context>> Context::create(const Config& config, const RankLayout& layout,
                                                   int generation, bool process_sets) {
  HORA_RETURN_IF_ERROR(validate_layout(layout));
  std::unique_ptr<Context> context(new Context(config, layout, generation, process_sets));
  HORA_RETURN_IF_ERROR(context->start());
  return context;
}

Status Context::start() {
  const RankLayout& l = layout_;
  const std::string requested = collectives::resolve_backend_name_for_job(
      backend_name_of(config_), l.source == LayoutSource::kMpirun);
  // NCCL moves GPU memory only: with HORA_BACKEND=nccl the engine negotiates and moves host
  // tensors over auto's host backend, and GPU tensors over NCCL (step 7).
  const StartPlan plan{Deadline::after_seconds(config_.start_timeout_s),
                       "rank " + std::to_string(l.rank) + " of " + std::to_string(l.size),
                       requested == "nccl" ? collectives::resolve_backend_name_for_job(
                                                 "auto", l.source == LayoutSource::kMpirun)
                                           : requested};
  host_backend_ = plan.backend;

  // 0. A backend that connects without the store (mpi) comes first; with no store given
  // (plain `mpirun -np N prog`), it carries the address of the store that rank 0 starts.
  const bool communicator_first = collectives::backend_connects_without_store(plan.backend);
  if (communicator_first) {
    collectives::MemoryStore unused;  // the mpi backend rendezvouses through MPI_COMM_WORLD
    HORA_RETURN_IF_ERROR(create_communicator(unused, plan));
  }
  // 1. The store.
  if (!l.has_store() && l.size > 1 && communicator_first) {
    HORA_RETURN_IF_ERROR(connect_shared_store(plan));
  } else if (!l.has_store()) {
    if (l.size > 1)
      return Status::invalid_argument(
          "hora init: " + plan.who + " (layout from " + layout_source_name(l.source) +
          ") has no rendezvous store: set HORA_RENDEZVOUS_ADDR and HORA_RENDEZVOUS_PORT (rank 0 "
          "hosts it), start the job with horarun, or use HORA_BACKEND=mpi under mpirun "
          "(variables read: " +
          l.variables_read + ")");
    store_ = std::make_unique<collectives::MemoryStore>();
  } else {
    HORA_RETURN_IF_ERROR(connect_launcher_store(plan));
  }
  // 2-3. Every rank arrives.
  HORA_RETURN_IF_ERROR(wait_for_ranks(plan));
  // Failures of this generation's ranks are published under its own keys.
  collectives::FailedRanks::process().begin(generation_, store_.get(),
                                            "hora/failed/" + std::to_string(generation_) + "/",
                                            l.rank, l.size);
  // 4. The communicator.
  if (!communicator_first) {
    communicator_store_ = std::make_unique<collectives::PrefixStore>(
        "hora/comm/" + std::to_string(generation_) + "/" + plan.backend, *store_);
    HORA_RETURN_IF_ERROR(create_communicator(*communicator_store_, plan));
  }
  // 5. Every rank has its communicator.
  HORA_RETURN_IF_ERROR(wait_for_communicators(plan));
  HORA_RETURN_IF_ERROR(discover_topology(plan.deadline));
  // 7. GPU tensors.
  auto device = DeviceSetup::create(backend_name_of(config_), l.rank, l.size, l.local_rank,
                                    generation_, config_.timeout_s, *store_, plan.deadline);
  if (!device.ok()) return device.status().with_context(" (hora init: " + plan.who + ")");
  device_ = std::move(device).value();
  HORA_LOG(kDebug) << "hora init: " << plan.who << " ready (" << layout_source_name(l.source)
                   << ", " << communicator_->backend_name() << ", " << topology_.hosts() << " host"
                   << (topology_.hosts() > 1 ? "s" : "") << ")";
  return Status::OK();
}

collectives::BackendOptions Context::backend_options() const {
  const RankLayout& l = layout_;
  collectives::BackendOptions options;
  options.gloo_iface = config_.gloo_iface;
  options.rendezvous_addr = l.store_addr.empty() ? "127.0.0.1" : l.store_addr;
  options.timeout_s = config_.timeout_s;
  options.shm_enabled = config_.shm_enabled;
  // The engine's fusion buffer in shared memory (single copy), up to kMaxSharedBuffer.
  options.shared_buffer_bytes =
      static_cast<size_t>(std::min<int64_t>(config_.fusion_threshold_bytes, kMaxSharedBuffer));
  options.secret = l.secret;
  options.local_rank = l.local_rank;
  options.thread_multiple = process_sets_;
  return options;
}

Status Context::create_communicator(collectives::Store& rendezvous, const StartPlan& plan) {
  const RankLayout& l = layout_;
  auto communicator = collectives::make_communicator(plan.backend, l.rank, l.size, rendezvous,
                                                     backend_options(), plan.deadline);
  if (!communicator.ok())
    return communicator.status().with_context(
        " (hora init: " + plan.who + ", HORA_BACKEND=" + backend_name_of(config_) +
        (plan.backend != backend_name_of(config_) ? " meaning " + plan.backend : std::string()) +
        ")");
  communicator_ = std::move(communicator).value();
  return Status::OK();
}

Status Context::connect_shared_store(const StartPlan& plan) {
  auto shared = share_store_address(*communicator_, layout_, plan.deadline, &server_);
  if (!shared.ok())
    return shared.status().with_context(" (hora init: " + plan.who +
                                        " sharing the rendezvous store's address over " +
                                        plan.backend + ")");
  const StoreAddress& a = shared.value();
  auto client = collectives::TcpStoreClient::connect(a.addr, a.port, a.secret, plan.deadline);
  if (!client.ok())
    return client.status().with_context(
        store_connect_context(plan.who, a.addr, a.port, " that rank 0 started,"));
  store_ = std::move(client).value();
  return Status::OK();
}

Status Context::connect_launcher_store(const StartPlan& plan) {
  const RankLayout& l = layout_;
  if (l.hosts_store) {
    collectives::TcpStoreServer::Options options;
    options.bind_address = is_loopback(l.store_addr) ? "127.0.0.1" : "0.0.0.0";
    options.port = l.store_port;
    options.secret = l.secret;
    auto server = collectives::TcpStoreServer::start(options);
    if (!server.ok())
      return server.status().with_context(" (hora init: " + plan.who + " hosts the store on port " +
                                          std::to_string(l.store_port) +
                                          "; set HORA_RENDEZVOUS_PORT to a free port)");
    server_ = std::move(server).value();
  }
  if (l.secret_is_fallback) {
    HORA_LOG(kWarning) << "HORA_SECRET is unset: the store uses a secret derived from the job's "
                          "address; set HORA_SECRET to keep strangers out";
  }
  auto client =
      collectives::TcpStoreClient::connect(l.store_addr, l.store_port, l.secret, plan.deadline);
  // A self-hosted store of a previous init (same address) may still hold a backlog of
  // connections it will never serve: a connection closed during the handshake is retried
  // until the deadline, by when the new host is listening.
  while (!client.ok() && client.status().code() == StatusCode::kRemote &&
         !plan.deadline.expired()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    client =
        collectives::TcpStoreClient::connect(l.store_addr, l.store_port, l.secret, plan.deadline);
  }
  if (!client.ok())
    return client.status().with_context(
        store_connect_context(plan.who, l.store_addr, l.store_port, ""));
  store_ = std::move(client).value();
  return Status::OK();
}

Status Context::wait_for_ranks(const StartPlan& plan) {
  const RankLayout& l = layout_;
  const std::string init_prefix = "hora/init/" + std::to_string(generation_) + "/";
  std::string me = l.hostname.empty() ? "pid " : l.hostname + " pid ";
  me += std::to_string(::getpid());
  HORA_RETURN_IF_ERROR(store_->set(init_prefix + "arrived/" + std::to_string(l.rank),
                                   collectives::Bytes(me.begin(), me.end())));
  HORA_RETURN_IF_ERROR(store_->add(init_prefix + "start", 1).status());
  Status arrived = store_->wait(rank_keys(init_prefix + "arrived/", l.size), plan.deadline);
  if (arrived.ok()) return Status::OK();
  std::vector<int> missing = missing_ranks(*store_, init_prefix + "arrived/", l.size);
  if (missing.empty()) return arrived;
  return Status::timeout("hora init: " + plan.who +
                         " waited HORA_START_TIMEOUT_S=" + seconds_text(config_.start_timeout_s) +
                         " s for every rank; " + std::to_string(missing.size()) +
                         " never arrived: rank" + (missing.size() > 1 ? "s " : " ") +
                         rank_list(missing) + " (not started, crashed, or not calling hora init)");
}

// Nobody returns from init until every rank has its communicator: a backend's connect can
// finish on one side of a pair before the other (gloo's full mesh does), and a rank that then
// exits at once would close the link under a peer still connecting.
Status Context::wait_for_communicators(const StartPlan& plan) {
  const RankLayout& l = layout_;
  const std::string ready = "hora/ready/" + std::to_string(generation_) + "/";
  HORA_RETURN_IF_ERROR(store_->set(ready + std::to_string(l.rank), collectives::Bytes{1}));
  Status all_ready = store_->wait(rank_keys(ready, l.size), plan.deadline);
  if (all_ready.ok()) return Status::OK();
  std::vector<int> missing = missing_ranks(*store_, ready, l.size);
  return Status::timeout("hora init: " + plan.who + ": rank" + (missing.size() > 1 ? "s " : " ") +
                         rank_list(missing) + " did not finish connecting within " +
                         seconds_text(config_.start_timeout_s) + " s (HORA_START_TIMEOUT_S)");
}

// Step 6 (see context.h).
Status Context::discover_topology(Deadline deadline) {
  const RankLayout& l = layout_;
  const std::string prefix = "hora/topo/" + std::to_string(generation_) + "/";
  if (l.size == 1) {
    topology_ = collectives::Topology::single_host(0, 1);
    return Status::OK();
  }
  auto topology = collectives::exchange_topology(*store_, prefix + "host/", l.rank, l.size,
                                                 host_identity(), deadline);
  if (!topology.ok())
    return topology.status().with_context(" (hora init: exchanging host identities)");
  topology_ = std::move(topology).value();
  if (l.source != LayoutSource::kHorarun) {
    // Horovod's cross group (what horarun computes from -H): the ranks with this local rank,
    // one per host that has that many ranks, in host order. Open MPI gives no node index at
    // all, and Slurm's node id counts every node: take both from the hosts found here.
    layout_.cross_rank = 0;
    layout_.cross_size = 0;
    for (int g = 0; g < topology_.hosts(); ++g) {
      if (static_cast<int>(topology_.host_members(g).size()) <= topology_.local_index()) continue;
      if (g < topology_.host_of(l.rank)) ++layout_.cross_rank;
      ++layout_.cross_size;
    }
  }
  const bool wants_links = config_.hierarchical_allreduce != HierarchicalMode::kOff ||
                           config_.hierarchical_allgather != HierarchicalMode::kOff;
  if (topology_.hosts() > 1 && wants_links) {
    Status measured =
        collectives::measure_links(*communicator_, *store_, prefix, &topology_, deadline);
    if (!measured.ok())
      return measured.with_context(" (hora init: measuring the links within and across hosts)");
    HORA_LOG(kDebug) << "hora init: " << topology_.hosts() << " hosts; link across hosts "
                     << topology_.cross.alpha_us << " us + "
                     << 1e-3 / std::max(topology_.cross.beta_us_per_byte, 1e-12)
                     << " GB/s, within a host " << topology_.intra.alpha_us << " us + "
                     << 1e-3 / std::max(topology_.intra.beta_us_per_byte, 1e-12) << " GB/s";
  }
  return calibrate_allreduce(deadline);
}

// Step 6, last part (see context.h): time the allreduce candidates on this communicator.
Status Context::calibrate_allreduce(Deadline deadline) {
  if (config_.calibrate_ms <= 0) return Status::OK();
  collectives::CalibrationOptions co;
  co.budget = std::chrono::milliseconds(static_cast<int64_t>(config_.calibrate_ms));
  // A stopped or dead peer is named within HORA_TIMEOUT_S of the call it stopped in, as in
  // any collective. (A deadline of HORA_TIMEOUT_S over the whole calibration failed inits
  // whose ranks share cores: hundreds of calls, each slow but live, ran past it.)
  co.call_timeout = std::chrono::milliseconds(static_cast<int64_t>(config_.timeout_s * 1000.0));
  auto cal = collectives::calibrate_allreduce(*communicator_, &topology_, co, deadline);
  if (!cal.ok()) return cal.status().with_context(" (hora init: calibrating allreduce)");
  HORA_LOG(kDebug) << "hora init: allreduce calibrated in " << cal.value().took_ms << " ms on "
                   << cal.value().cost_model << " (HORA_CALIBRATE_MS=" << config_.calibrate_ms
                   << "; us per call, slowest rank): " << cal.value().describe();
  topology_.calibration =
      std::make_shared<const collectives::AllreduceCalibration>(std::move(cal).value());
  return Status::OK();
}

Status Context::shutdown() {
  if (shut_down_) return Status::OK();
  shut_down_ = true;
  device_.reset();
  communicator_.reset();
  communicator_store_.reset();
  Status status;
  // With more than one rank store_ is a TcpStoreClient: horarun's, or one a rank hosts.
  if (store_ != nullptr && layout_.size > 1 &&
      (server_ != nullptr || layout_.source != LayoutSource::kHorarun)) {
    // Self-hosted store: the host keeps serving until every rank is done with it.
    const std::string prefix = "hora/exit/" + std::to_string(generation_) + "/";
    status = store_->set(prefix + std::to_string(layout_.rank), collectives::Bytes{1});
    if (server_ == nullptr) {
      // Stay connected until the host stops serving (it closes this connection once every
      // rank's exit key is in), so that an init right after this shutdown never reaches the
      // old server, which would vanish under it. A set whose answer the closing cut off made
      // it in (the host stops only after every key is there).
      Status closed =
          store_->wait({prefix + "never"}, Deadline::after_seconds(config_.start_timeout_s));
      if (status.code() == StatusCode::kRemote && closed.code() == StatusCode::kRemote)
        status = Status::OK();
    }
    if (status.ok() && server_ != nullptr) {
      Status all = wait_for_live_ranks(*store_, prefix, layout_.size,
                                       Deadline::after_seconds(config_.start_timeout_s));
      if (!all.ok()) {
        status =
            Status::timeout("hora shutdown: the store host (rank " + std::to_string(layout_.rank) +
                            ") stopped waiting after " + seconds_text(config_.start_timeout_s) +
                            " s; ranks that never reached shutdown: " +
                            rank_list(missing_ranks(*store_, prefix, layout_.size)));
      }
    }
  }
  collectives::FailedRanks::process().end();  // before the store it posts to goes
  store_.reset();
  if (server_ != nullptr) server_->stop();
  server_.reset();
  return status;
}

}  // namespace hora
