// Controller: one negotiation round, the same on every rank. Every rank calls round() the same
// number of times (the engine loop); rounds are matched by order.
//
// A round:
//  1. Route this rank's new requests: a name whose cached response matches goes to the cache
//     path; anything else goes to the coordinator. A cached name requested differently, or a
//     cached request waiting longer than half of HORA_STALL_WARNING_S (so the coordinator can
//     name the missing ranks), invalidates its cache position.
//  2. One allreduce (sum, int64) over [has-uncached, shutdown count, shutdown rank sum, pause
//     count, ranks setting position words, one word per cache position] (round_counts.h has the
//     encoding and its range). A rank adds, per position: 1 when it is ready (it has the tensor, or
//     it has joined and the cached collective is an allreduce with sum or average), (size+1) when
//     it holds the tensor, (size+1)^2 when it invalidates the position. The sums decode to: ready
//     on every rank, held by at least one rank that has not joined, invalidated by anyone. One
//     reduction carries readiness, join, invalidation, shutdown and pause, so the steady state
//     (every tensor cached) costs this single small collective. Every wait of a round ends at
//     one deadline, HORA_TIMEOUT_S after the round began.
//  3. Invalidated positions are erased on every rank (their holders resubmit to the
//     coordinator in this round); agreed positions become responses, in position order; a
//     grouped allreduce is released only when all its members are agreed.
//  4. When any rank has uncached requests: rank 0 gathers every rank's list (point to point,
//     length then bytes), its Coordinator decides, and it broadcasts the ResponseList, which
//     every rank appends after the cached responses and inserts into its cache in list order.
// Every rank thus holds the same list in the same order and the same cache afterwards.
//
// Background thread only; the communicator is used only from here and the Executor.
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <memory>
#include <string>
#include <unordered_set>
#include <vector>

#include "collectives/communicator.h"
#include "collectives/scratch_pool.h"
#include "core/base/deadline.h"
#include "core/engine/coordinator.h"
#include "core/engine/message.h"
#include "core/engine/response_cache.h"
#include "core/engine/stall_inspector.h"
#include "core/engine/timeline.h"
#include "hora/status.h"

namespace hora {
namespace engine {

struct ControllerOptions {
  double timeout_s = 300;  // every wait of a round
  double stall_warning_s = 60;
  double stall_shutdown_s = 0;
  int64_t cache_capacity = 1024;
  Timeline* timeline = nullptr;  // rank 0 marks each rank's request arriving (may be null)
};

// Updated during the round, before its responses execute (readable from any thread).
struct ControllerStats {
  std::atomic<int64_t> rounds{0};
  std::atomic<int64_t> cache_hits{0};
  std::atomic<int64_t> repeats{0};  // lists that repeated a kept one (ResponseList::repeated)
  std::atomic<int64_t> coordinated{0};
  std::atomic<int64_t> evictions{0};
};

class Controller {
 public:
  Controller(collectives::Communicator& comm, const ControllerOptions& options);

  // What this rank asks of every rank in a round.
  struct Asks {
    bool shutdown = false;  // stop after this round
    bool pause = false;     // park the engines after this round (every rank must ask)
  };
  // One round. `fresh`: this rank's requests enqueued since the last round, where they lie in
  // their queue entries (TensorQueue::take_new): each must stay valid until its response was
  // executed or the engine stopped (the cache path keeps the pointer; what goes to the
  // coordinator is copied). The list's
  // shutdown is set when any rank asked, its pause when every rank asked. Fails only when
  // communication fails or a control message is corrupted (then the engine is broken).
  StatusOr<ResponseList> round(const std::vector<Request*>& fresh, Asks asks);

  // After the engine executed the list the last round returned: keeps it whole when it has an
  // id (every response came from the cache), so that a later round agreeing the same positions
  // in the same order (the next training step) returns it again, `repeated`, instead of copying
  // each response out of the cache; the last few such lists are kept. Otherwise keeps its
  // responses' names that live on the heap (a model's parameter names are longer than
  // std::string's inline capacity), so that the next rounds' cache hits copy into them instead
  // of allocating a name per tensor per step. Optional: a list not handed back is simply freed
  // (and none repeats it).
  void recycle(ResponseList& list);

  // This rank has requests not yet agreed (the engine then runs rounds back to back).
  bool has_pending() const { return waiting_count_ > 0 || !resubmit_.empty() || !sent_.empty(); }
  bool joined() const { return joined_; }
  // The autotuner's response cache switch (between rounds, at the same round on every rank).
  // Off: nothing new is cached, and a request whose name is cached invalidates its position
  // (it and any rank's request waiting there go to the coordinator), so the cache empties as
  // the names come back. On again: responses are cached as they are agreed.
  void set_cache_enabled(bool on) { cache_enabled_ = on; }
  const ControllerStats& stats() const { return stats_; }

 private:
  // A request of this rank waiting on the cache path, at its cache position (in its queue
  // entry, which outlives the wait).
  struct Waiting {
    const Request* request = nullptr;
    std::chrono::steady_clock::time_point since;
    bool in_use = false;
  };
  // The request waiting at position `p`, or null.
  Waiting* waiting_at(int p) {
    return p < static_cast<int>(cached_.size()) && cached_[p].in_use ? &cached_[p] : nullptr;
  }
  // Empties position `p` (REQUIRES: in use).
  void leave(int p);
  // Position `p` agreed with `response` (its cached response) in the round's list: touched,
  // and the request waiting there, if any, leaves with its entry in the response.
  void take_hit(int p, Response& response);
  // recycle(): the responses' heap-held names go to spare_names_ (as many as it may hold).
  void keep_names(std::vector<Response>& responses);
  void route(const std::vector<Request*>& fresh, std::vector<Request>& outgoing,
             std::vector<int>& invalidate, std::chrono::steady_clock::time_point now);
  // Step 1: drops the positions no longer held from held_, routes `fresh` (route()), and
  // leaves in invalidate_ the positions this rank invalidates, sorted, each once (a joined
  // rank adds every cached collective it cannot take part in).
  void route_round(const std::vector<Request*>& fresh, std::vector<Request>& outgoing,
                   std::chrono::steady_clock::time_point now);
  // Step 2: this rank's words into vector_ (round_counts.h): the header from `asks` and
  // `has_uncached`, then per position what it holds (held_), is ready for (joined) or
  // invalidates (invalidate_).
  void encode_counts(Asks asks, bool has_uncached);
  // Step 2: sums vector_ over every rank (in place; nothing to do alone).
  Status reduce_counts(Deadline deadline);
  // Step 3: the summed header: shutdown (any rank asked, and who) and pause (every rank).
  ResponseList decode_header() const;
  // Step 3: each summed position word: invalidated anywhere -> erased (a request waiting here
  // goes to `outgoing`); ready on every rank and held by one -> into agreed_, in position order.
  void decode_positions(std::vector<Request>& outgoing);
  // Step 3: agreed_ becomes list->responses (a group only when every member is agreed),
  // reusing the kept list of the same positions at cache `generation` when there is one
  // (returns true then). Sets listed_ and out_.id.
  bool list_agreed(uint64_t generation, ResponseList* list);
  // The kept list whose positions are agreed_ at cache `generation`, or null.
  struct KeptList;
  KeptList* kept_for(uint64_t generation);
  // Copies the request waiting at cache position `p` to `to` (for the coordinator), with every
  // other member of its group waiting on the cache path: a group leaves that path only whole,
  // or the members left behind would wait for one that no longer comes.
  void send_to_coordinator(int p, std::vector<Request>& to);
  // Rank 0: a timeline mark "rank R ready" on each tensor R asked for.
  void mark_ready(int rank, const std::vector<Request>& requests,
                  std::chrono::steady_clock::time_point at);
  Status exchange(std::vector<Request>& outgoing, const std::string& fatal, Deadline deadline,
                  ResponseList* list);
  // exchange()'s end, on every rank: the coordinator's list `decided` goes into the cache (what
  // is cacheable) and is appended to *list.
  Status apply(ResponseList decided, ResponseList* list);

  collectives::Communicator& comm_;
  const ControllerOptions options_;
  collectives::ScratchPool scratch_;
  ResponseCache cache_;
  std::unique_ptr<Coordinator> coordinator_;   // rank 0 only
  std::unique_ptr<StallInspector> inspector_;  // rank 0 only
  // Indexed by cache position (as long as the cache's positions): the request waiting there.
  // A vector, not a map: the steady state moves every tensor through it each step.
  std::vector<Waiting> cached_;
  int waiting_count_ = 0;  // positions of cached_ in use
  // At or before the arrival of every request waiting in cached_ (route's stall scan).
  std::chrono::steady_clock::time_point oldest_wait_;
  std::vector<Request> resubmit_;         // for the coordinator next round
  std::unordered_set<std::string> sent_;  // names at the coordinator, not yet answered
  bool joined_ = false;
  std::vector<int64_t> vector_;  // the round's reduction buffer
  std::vector<int> positions_;   // route(): a group's cache positions (reused, no allocation)
  std::vector<int> invalidate_;  // route_round(): positions this rank invalidates (reused)
  std::vector<int> agreed_;      // decode_positions(): positions agreed (reused)
  // Positions of cached_ this rank waits at (those that left are dropped at the next round's
  // start): the round adds its words from these, not from every position.
  std::vector<int> held_;
  std::vector<int> visit_;  // decode_positions(), one rank: the positions to decode (reused)
  // Heap-held names of executed responses (recycle()), for the cache hits' copies to reuse.
  std::vector<std::string> spare_names_;
  // Lists of cache hits alone, kept for a later round that agrees them again (round(),
  // recycle()): a training loop's step, and beside it a few other lists it repeats (a metric
  // averaged each step in a round of its own).
  struct KeptList {
    uint64_t id = 0;  // ResponseList::cached_id; 0: no list here
    std::vector<Response> responses;
    std::vector<int> positions;  // the responses' cache positions, in list order
    uint64_t generation = 0;     // the cache's generation they were read at
    uint64_t kept = 0;           // when it was kept (the least recent is replaced)
  };
  std::array<KeptList, kKeptLists> kept_;
  // The last list round() returned when it had an id (responses aside): kept when handed back.
  KeptList out_;
  uint64_t next_list_id_ = 0;
  uint64_t kept_count_ = 0;
  std::vector<int> listed_;  // list_agreed(): the list's positions (reused)
  ControllerStats stats_;
  bool cache_enabled_ = true;
};

}  // namespace engine
}  // namespace hora
