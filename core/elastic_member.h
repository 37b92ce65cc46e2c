// ElasticMember: this process's membership of an elastic job (HORA_ELASTIC=1, started by
// `horarun --min-np/--max-np/--host-discovery-script`), the worker side of the protocol in
// collectives/rendezvous/elastic_protocol.h. It holds its own connection to horarun's store for
// the whole life of the process (each generation's Context opens and closes its own), and
// knows the worker's id and the generation it was last given.
//
// The runtime (core/hora.cc) keeps one from the first elastic init: init asks it for the first
// assignment listing the worker (next_layout), reset posts the report of the generation it
// leaves (post_reset) and asks for the next one, hosts_updated reads the driver's flag for the
// current generation (hosts_updated_flag).
//
// Threads: not thread-safe; the runtime calls it under its mutex.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "collectives/rendezvous/elastic_protocol.h"
#include "collectives/rendezvous/store.h"
#include "core/env_source.h"
#include "core/layout.h"
#include "hora/status.h"

namespace hora {

// HORA_ELASTIC is "1" in `lookup`.
bool elastic_mode(const EnvLookup& lookup);

class ElasticMember {
 public:
  // Reads HORA_ELASTIC_WORKER (required, >= 0), HORA_ELASTIC_TIMEOUT_S (default 600) and
  // horarun's store address (read_elastic_store), and connects the store within
  // `connect_timeout_s`. kInvalidArgument names a missing or malformed variable.
  static StatusOr<std::unique_ptr<ElasticMember>> connect(const EnvLookup& lookup,
                                                          double connect_timeout_s);

  int64_t worker_id() const { return worker_id_; }
  // The generation of the last assignment next_layout returned; -1 before the first.
  int64_t generation() const { return generation_; }
  double timeout_s() const { return timeout_s_; }

  // Waits (HORA_ELASTIC_TIMEOUT_S) for the newest generation after generation() that lists
  // this worker, makes it current and returns this worker's layout in it. Errors: kTimeout
  // (none came), kFailedPrecondition (removed from the job, or horarun aborted it: its
  // message), each naming the worker.
  StatusOr<RankLayout> next_layout();
  // Posts reset_key(generation(), worker) = `report` (step 3 of the protocol).
  Status post_reset(const collectives::elastic::ResetReport& report);
  // Whether the driver set hosts_updated_key(generation()): one store round trip.
  StatusOr<bool> hosts_updated_flag();

 private:
  ElasticMember(RankLayout store_layout, int64_t worker_id, double timeout_s,
                std::unique_ptr<collectives::Store> store)
      : store_layout_(std::move(store_layout)),
        worker_id_(worker_id),
        timeout_s_(timeout_s),
        store_(std::move(store)) {}

  const RankLayout store_layout_;  // address, secret, hostname; no rank
  const int64_t worker_id_;
  const double timeout_s_;
  std::unique_ptr<collectives::Store> store_;
  int64_t generation_ = -1;
};

}  // namespace hora
