#include "core/context.h"

#include <unistd.h>

#include <sstream>
#include <string>
#include <vector>

#include "collectives/backends/registry.h"
#include "collectives/rendezvous/memory_store.h"
#include "collectives/rendezvous/prefix_store.h"
#include "collectives/rendezvous/tcp_store_client.h"
#include "core/base/logging.h"

namespace hora {
namespace {

bool is_loopback(const std::string& host) {
  return host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0;
}

std::string join_ranks(const std::vector<int>& ranks) {
  std::string out;
  for (int r : ranks) out += (out.empty() ? "" : ", ") + std::to_string(r);
  return out;
}

// Ranks r in [0, size) whose "<prefix><r>" key is absent (checked one by one).
std::vector<int> missing_ranks(collectives::Store& store, const std::string& prefix, int size) {
  std::vector<int> missing;
  for (int r = 0; r < size; ++r) {
    auto present = store.check({prefix + std::to_string(r)});
    if (!present.is_ok() || !present.value()) missing.push_back(r);
  }
  return missing;
}

std::vector<std::string> rank_keys(const std::string& prefix, int size) {
  std::vector<std::string> keys;
  for (int r = 0; r < size; ++r) keys.push_back(prefix + std::to_string(r));
  return keys;
}

// "2", "0.5": seconds as a person would write them.
std::string seconds_text(double s) {
  std::ostringstream out;
  out << s;
  return out.str();
}

std::string backend_name_of(const Config& config) {
  return config.backend == BackendKind::kAuto ? "auto" : backend_kind_name(config.backend);
}

}  // namespace

Context::Context(const Config& config, const RankLayout& layout, int generation)
    : config_(config), layout_(layout), generation_(generation) {}

Context::~Context() {
  Status status = shutdown();
  if (!status.is_ok()) {
    HORA_LOG(kWarning) << "hora shutdown: " << status.to_string();
  }
}

StatusOr<std::unique_ptr<Context>> Context::create(const Config& config, const RankLayout& layout,
                                                   int generation) {
  HORA_RETURN_IF_ERROR(validate_layout(layout));
  std::unique_ptr<Context> context(new Context(config, layout, generation));
  HORA_RETURN_IF_ERROR(context->start());
  return context;
}

Status Context::start() {
  const RankLayout& l = layout_;
  const Deadline start_deadline = Deadline::after_seconds(config_.start_timeout_s);
  const std::string who = "rank " + std::to_string(l.rank) + " of " + std::to_string(l.size);
  const std::string backend = collectives::resolve_backend_name(backend_name_of(config_));

  // 1. The store.
  if (!l.has_store()) {
    if (l.size > 1)
      return Status::invalid_argument(
          "hora init: " + who + " (layout from " + layout_source_name(l.source) +
          ") has no rendezvous store: set HORA_RENDEZVOUS_ADDR and HORA_RENDEZVOUS_PORT (rank 0 "
          "hosts it) or start the job with horarun (variables read: " + l.variables_read + ")");
    store_ = std::make_unique<collectives::MemoryStore>();
  } else {
    if (l.hosts_store) {
      collectives::TcpStoreServer::Options options;
      options.bind_address = is_loopback(l.store_addr) ? "127.0.0.1" : "0.0.0.0";
      options.port = l.store_port;
      options.secret = l.secret;
      auto server = collectives::TcpStoreServer::start(options);
      if (!server.is_ok())
        return server.status().with_context(" (hora init: " + who + " hosts the store on port " +
                                            std::to_string(l.store_port) +
                                            "; set HORA_RENDEZVOUS_PORT to a free port)");
      server_ = std::move(server).value();
    }
    if (l.secret_is_fallback) {
      HORA_LOG(kWarning) << "HORA_SECRET is unset: the store uses a secret derived from the job's "
                            "address; set HORA_SECRET to keep strangers out";
    }
    auto client =
        collectives::TcpStoreClient::connect(l.store_addr, l.store_port, l.secret, start_deadline);
    if (!client.is_ok())
      return client.status().with_context(" (hora init: " + who + " connecting the store at " +
                                          l.store_addr + ":" + std::to_string(l.store_port) +
                                          " within HORA_START_TIMEOUT_S)");
    store_ = std::move(client).value();
  }

  // 2-3. Every rank arrives.
  const std::string init_prefix = "hora/init/" + std::to_string(generation_) + "/";
  std::string me = l.hostname.empty() ? "pid " : l.hostname + " pid ";
  me += std::to_string(::getpid());
  HORA_RETURN_IF_ERROR(store_->set(init_prefix + "arrived/" + std::to_string(l.rank),
                                   collectives::Bytes(me.begin(), me.end())));
  HORA_RETURN_IF_ERROR(store_->add(init_prefix + "start", 1).status());
  Status arrived = store_->wait(rank_keys(init_prefix + "arrived/", l.size), start_deadline);
  if (!arrived.is_ok()) {
    std::vector<int> missing = missing_ranks(*store_, init_prefix + "arrived/", l.size);
    if (missing.empty()) return arrived;
    return Status::timeout("hora init: " + who + " waited HORA_START_TIMEOUT_S=" +
                           seconds_text(config_.start_timeout_s) + " s for every rank; " +
                           std::to_string(missing.size()) + " never arrived: rank" +
                           (missing.size() > 1 ? "s " : " ") + join_ranks(missing) +
                           " (not started, crashed, or not calling hora init)");
  }

  // 4. The communicator.
  communicator_store_ = std::make_unique<collectives::PrefixStore>(
      "hora/comm/" + std::to_string(generation_) + "/" + backend, *store_);
  collectives::BackendOptions options;
  options.gloo_iface = config_.gloo_iface;
  options.rendezvous_addr = l.has_store() ? l.store_addr : "127.0.0.1";
  options.timeout_s = config_.timeout_s;
  options.shm_enabled = config_.shm_enabled;
  options.secret = l.secret;
  auto communicator = collectives::make_communicator(backend, l.rank, l.size,
                                                     *communicator_store_, options, start_deadline);
  if (!communicator.is_ok())
    return communicator.status().with_context(" (hora init: " + who + ", HORA_BACKEND=" +
                                              backend_name_of(config_) + ")");
  communicator_ = std::move(communicator).value();

  // 5. Nobody returns from init until every rank has its communicator: a backend's connect
  // can finish on one side of a pair before the other (gloo's full mesh does), and a rank
  // that then exits at once would close the link under a peer still connecting.
  const std::string ready = "hora/ready/" + std::to_string(generation_) + "/";
  HORA_RETURN_IF_ERROR(store_->set(ready + std::to_string(l.rank), collectives::Bytes{1}));
  Status all_ready = store_->wait(rank_keys(ready, l.size), start_deadline);
  if (!all_ready.is_ok()) {
    std::vector<int> missing = missing_ranks(*store_, ready, l.size);
    return Status::timeout("hora init: " + who + ": rank" + (missing.size() > 1 ? "s " : " ") +
                           join_ranks(missing) + " did not finish connecting within " +
                           seconds_text(config_.start_timeout_s) + " s (HORA_START_TIMEOUT_S)");
  }
  HORA_LOG(kDebug) << "hora init: " << who << " ready (" << layout_source_name(l.source) << ", "
                   << communicator_->backend_name() << ")";
  return Status::ok();
}

Status Context::shutdown() {
  if (shut_down_) return Status::ok();
  shut_down_ = true;
  communicator_.reset();
  communicator_store_.reset();
  Status status;
  if (store_ != nullptr && layout_.has_store() && layout_.size > 1 &&
      (server_ != nullptr || layout_.source != LayoutSource::kHorarun)) {
    // Self-hosted store: the host keeps serving until every rank is done with it.
    const std::string prefix = "hora/exit/" + std::to_string(generation_) + "/";
    status = store_->set(prefix + std::to_string(layout_.rank), collectives::Bytes{1});
    if (status.is_ok() && server_ != nullptr) {
      Status all = store_->wait(rank_keys(prefix, layout_.size),
                                Deadline::after_seconds(config_.start_timeout_s));
      if (!all.is_ok()) {
        status = Status::timeout("hora shutdown: the store host (rank " +
                                 std::to_string(layout_.rank) + ") stopped waiting after " +
                                 seconds_text(config_.start_timeout_s) +
                                 " s; ranks that never reached shutdown: " +
                                 join_ranks(missing_ranks(*store_, prefix, layout_.size)));
      }
    }
  }
  store_.reset();
  if (server_ != nullptr) server_->stop();
  server_.reset();
  return status;
}

}  // namespace hora
