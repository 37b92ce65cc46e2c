#include "core/elastic_member.h"

#include <cstring>
#include <utility>

#include "collectives/rendezvous/tcp_store_client.h"
#include "core/base/deadline.h"
#include "core/base/env.h"

namespace hora {
namespace {

namespace ce = collectives::elastic;

constexpr double kDefaultTimeoutS = 600.0;

// An integer or number variable through `parse`; `fallback` when unset, an error when
// `required` and unset.
template <typename T, typename Parse>
StatusOr<T> read_number(const EnvLookup& lookup, const char* name, bool required, T fallback,
                        Parse parse) {
  const char* value = lookup(name);
  if (value == nullptr) {
    if (required)
      return Status::invalid_argument(std::string("HORA_ELASTIC=1 but ") + name +
                                      " is unset (horarun sets it for each elastic worker)");
    return fallback;
  }
  return parse(name, value);
}

}  // namespace

bool elastic_mode(const EnvLookup& lookup) {
  const char* value = lookup(ce::kElasticVariable);
  return value != nullptr && std::strcmp(value, "1") == 0;
}

StatusOr<std::unique_ptr<ElasticMember>> ElasticMember::connect(const EnvLookup& lookup,
                                                                double connect_timeout_s) {
  HORA_ASSIGN_OR_RETURN(
      int64_t worker,
      read_number<int64_t>(lookup, ce::kWorkerVariable, true, 0, [](const char* n, const char* v) {
        return parse_int(n, v, 0, int64_t{1} << 40);
      }));
  HORA_ASSIGN_OR_RETURN(double timeout_s,
                        read_number<double>(lookup, ce::kTimeoutVariable, false, kDefaultTimeoutS,
                                            [](const char* n, const char* v) {
                                              return parse_double(n, v, 0.001, 1e9);
                                            }));
  HORA_ASSIGN_OR_RETURN(RankLayout store_layout, read_elastic_store(lookup));
  auto client = collectives::TcpStoreClient::connect(store_layout.store_addr,
                                                     store_layout.store_port, store_layout.secret,
                                                     Deadline::after_seconds(connect_timeout_s));
  if (!client.ok())
    return client.status().with_context(
        " (elastic worker " + std::to_string(worker) + " connecting horarun's store at " +
        store_layout.store_addr + ":" + std::to_string(store_layout.store_port) + ")");
  return std::unique_ptr<ElasticMember>(
      new ElasticMember(std::move(store_layout), worker, timeout_s, std::move(client).value()));
}

StatusOr<RankLayout> ElasticMember::next_layout() {
  HORA_ASSIGN_OR_RETURN(ce::Assignment assignment,
                        ce::wait_for_assignment(*store_, worker_id_, generation_,
                                                Deadline::after_seconds(timeout_s_)));
  const ce::WorkerSlot* slot = assignment.find(worker_id_);
  if (slot == nullptr)  // wait_for_assignment returns only generations that list the worker
    return Status::internal("elastic generation " + std::to_string(assignment.generation) +
                            " does not list worker " + std::to_string(worker_id_));
  generation_ = assignment.generation;
  return layout_of_slot(store_layout_, assignment.size(), *slot);
}

Status ElasticMember::post_reset(const ce::ResetReport& report) {
  return store_->set(ce::reset_key(generation_, worker_id_), ce::format_reset_report(report));
}

StatusOr<bool> ElasticMember::hosts_updated_flag() {
  return store_->check({ce::hosts_updated_key(generation_)});
}

}  // namespace hora
