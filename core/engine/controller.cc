#include "core/engine/controller.h"

#include <algorithm>
#include <cstring>
#include <map>
#include <utility>

#include "collectives/algorithms/algorithms.h"
#include "core/base/deadline.h"
#include "core/engine/round_counts.h"
#include "core/engine/tensor_queue.h"
#include "hora/logging.h"

namespace hora {
namespace engine {
namespace {

using collectives::AlgorithmOptions;
constexpr uint32_t kControlTag = 0x63746c31;  // "ctl1"
constexpr int kHeader = round_counts::kHeaderWords;

bool zeros_ok(const Response& r) { return joined_zeros_ok(r.type, r.op); }

}  // namespace

Controller::Controller(collectives::Communicator& comm, const ControllerOptions& options)
    : comm_(comm), options_(options), cache_(options.cache_capacity) {
  if (comm_.rank() == 0) {
    coordinator_ = std::make_unique<Coordinator>(comm_.size());
    inspector_ = std::make_unique<StallInspector>(options.stall_warning_s, options.stall_shutdown_s,
                                                  comm_.size());
  }
}

void Controller::route(const std::vector<Request*>& fresh, std::vector<Request>& outgoing,
                       std::vector<int>& invalidate, std::chrono::steady_clock::time_point now) {
  // Every position a request can wait at exists before this round's routing.
  if (cached_.size() < static_cast<size_t>(cache_.position_count()))
    cached_.resize(cache_.position_count());
  const int rank = comm_.rank();
  for (size_t i = 0; i < fresh.size();) {
    const Request& q = *fresh[i];
    // A group is routed as a unit: it takes the cache path only when every member does.
    const size_t n = q.group_size > 0 ? std::min<size_t>(q.group_size, fresh.size() - i) : 1;
    bool all_cached = q.type != CollectiveType::kJoin && q.type != CollectiveType::kBarrier;
    std::vector<int>& positions = positions_;
    positions.resize(n);
    for (size_t k = 0; k < n; ++k) {
      const Request& m = *fresh[i + k];
      if (!cache_.lookup(m, &positions[k]) || !cache_enabled_) all_cached = false;
    }
    // The cache path keeps the request where it lies; the coordinator's gets a copy.
    for (size_t k = 0; k < n; ++k) {
      const Request& m = *fresh[i + k];
      if (m.type == CollectiveType::kJoin) joined_ = true;
      if (all_cached) {
        Waiting& w = cached_[positions[k]];
        if (waiting_count_ == 0) oldest_wait_ = now;  // later arrivals wait since `now` or later
        if (!w.in_use) {
          ++waiting_count_;
          held_.push_back(positions[k]);
        }
        w.request = &m;
        w.since = now;
        w.in_use = true;
      } else {
        if (positions[k] >= 0) invalidate.push_back(positions[k]);
        sent_.insert(m.name);
        outgoing.push_back(m);
        outgoing.back().rank = rank;
      }
    }
    i += n;
  }
  // Cached requests waiting long: let the coordinator see them (it names missing ranks).
  const auto patience = std::chrono::duration_cast<std::chrono::steady_clock::duration>(
      std::chrono::duration<double>(options_.stall_warning_s / 2));
  // oldest_wait_ is at or before every waiting request's arrival, so the scan is skipped while
  // even the oldest cannot have waited that long (every round otherwise visits every position).
  if (waiting_count_ == 0 || now - oldest_wait_ < patience) return;
  std::chrono::steady_clock::time_point oldest = now;
  for (int p = 0; p < static_cast<int>(cached_.size()); ++p) {
    // A group's other members leave with it (send_to_coordinator), so in_use is re-read.
    if (!cached_[p].in_use) continue;
    if (now - cached_[p].since >= patience) {
      invalidate.push_back(p);
      send_to_coordinator(p, outgoing);
    } else {
      oldest = std::min(oldest, cached_[p].since);
    }
  }
  oldest_wait_ = oldest;
}

void Controller::leave(int p) {
  cached_[p].in_use = false;  // the request stays, to be overwritten by the next one there
  --waiting_count_;
}

void Controller::send_to_coordinator(int p, std::vector<Request>& to) {
  const Request& request = *cached_[p].request;
  sent_.insert(request.name);
  to.push_back(request);
  to.back().rank = comm_.rank();
  leave(p);
  if (request.group_size <= 0) return;
  for (int m = 0; m < static_cast<int>(cached_.size()); ++m) {
    Waiting& w = cached_[m];
    if (w.in_use && w.request->group_size > 0 && w.request->group_key == request.group_key) {
      sent_.insert(w.request->name);
      to.push_back(*w.request);
      to.back().rank = comm_.rank();
      leave(m);
    }
  }
}

// The round, in the steps of controller.h's protocol comment.
StatusOr<ResponseList> Controller::round(const std::vector<Request*>& fresh, Asks asks) {
  const auto now = std::chrono::steady_clock::now();
  const Deadline deadline = Deadline::after_seconds(options_.timeout_s);
  ++stats_.rounds;
  // 1. Route: the cache path, or the coordinator (with last round's evicted resubmissions).
  std::vector<Request> outgoing;
  outgoing.swap(resubmit_);
  route_round(fresh, outgoing, now);
  // Rank 0 forces an exchange when a stall has turned fatal, so every rank hears of it.
  std::string fatal;
  if (coordinator_) fatal = inspector_->check(coordinator_->pending(), now);

  // 2. One allreduce of the counts.
  encode_counts(asks, !outgoing.empty() || !invalidate_.empty() || !fatal.empty());
  HORA_RETURN_IF_ERROR(reduce_counts(deadline));

  // 3. Decode: invalidated positions erased, agreed ones listed.
  ResponseList list = decode_header();
  decode_positions(outgoing);
  const uint64_t generation = cache_.generation();
  const bool repeated = list_agreed(generation, &list);

  // 4. The coordinator's exchange, when any rank has uncached requests.
  const bool cache_only = vector_[round_counts::kHasUncached] == 0;
  if (!cache_only) {
    HORA_RETURN_IF_ERROR(exchange(outgoing, fatal, deadline, &list));
    if (!fatal.empty() && list.fatal.empty()) list.fatal = fatal;
  }
  // Only a list of the cache's responses alone can be kept for a later round.
  if (cache_only && !list.responses.empty()) {
    out_.positions.swap(listed_);
    out_.generation = generation;
    list.cached_id = out_.id;
    list.repeated = repeated;
    if (list.repeated) ++stats_.repeats;
  } else {
    out_.id = 0;
  }
  return list;
}

void Controller::route_round(const std::vector<Request*>& fresh, std::vector<Request>& outgoing,
                             std::chrono::steady_clock::time_point now) {
  std::vector<int>& invalidate = invalidate_;
  invalidate.clear();
  // held_ keeps the positions still waiting (route adds the new ones, each once: a position
  // is added only when it starts waiting, and one that left was dropped here).
  held_.erase(
      std::remove_if(held_.begin(), held_.end(), [this](int p) { return !cached_[p].in_use; }),
      held_.end());
  route(fresh, outgoing, invalidate, now);
  // A joined rank is ready for every cached sum/average allreduce; the others it cannot take
  // part in, so it invalidates them and the coordinator answers them with an error.
  if (joined_) {
    for (int p = 0; p < cache_.position_count(); ++p)
      if (cache_.in_use(p) && !zeros_ok(cache_.at(p))) invalidate.push_back(p);
  }
  std::sort(invalidate.begin(), invalidate.end());
  invalidate.erase(std::unique(invalidate.begin(), invalidate.end()), invalidate.end());
}

void Controller::encode_counts(Asks asks, bool has_uncached) {
  using round_counts::position_word;
  const int size = comm_.size();
  const int positions = cache_.position_count();
  vector_.assign(kHeader + positions, 0);
  vector_[round_counts::kHasUncached] = has_uncached ? 1 : 0;
  vector_[round_counts::kShutdownCount] = asks.shutdown ? 1 : 0;
  vector_[round_counts::kShutdownRankSum] = asks.shutdown ? comm_.rank() : 0;
  vector_[round_counts::kPauseCount] = asks.pause ? 1 : 0;
  // Whether this rank sets any position word below (joined: perhaps; counted conservatively).
  vector_[round_counts::kPositionRanks] =
      (waiting_count_ > 0 || joined_ || !invalidate_.empty()) ? 1 : 0;
  // Holding a waiting request: ready and holds.
  if (waiting_count_ > 0) {
    const int64_t holds =
        position_word(/*ready=*/true, /*holds=*/true, /*invalidates=*/false, size);
    for (int p : held_)
      if (cached_[p].in_use) vector_[kHeader + p] += holds;
  }
  // Joined: ready, without holding, for each cached sum/average allreduce it does not hold.
  if (joined_) {
    const int64_t ready =
        position_word(/*ready=*/true, /*holds=*/false, /*invalidates=*/false, size);
    for (int p = 0; p < positions; ++p)
      if (cache_.in_use(p) && zeros_ok(cache_.at(p)) && waiting_at(p) == nullptr)
        vector_[kHeader + p] += ready;
  }
  const int64_t invalidates =
      position_word(/*ready=*/false, /*holds=*/false, /*invalidates=*/true, size);
  for (int p : invalidate_) vector_[kHeader + p] += invalidates;
}

Status Controller::reduce_counts(Deadline deadline) {
  if (comm_.size() == 1) return Status::OK();  // alone, the sums are this rank's words
  AlgorithmOptions ao;
  ao.deadline = deadline;
  ao.scratch = &scratch_;
  ao.tag = kControlTag;
  Status s = collectives::recursive_doubling_allreduce(
      comm_, vector_.data(), vector_.data(), vector_.size(), DataType::kInt64, ReduceOp::kSum, ao);
  if (!s.ok()) return Status(s.code(), "negotiation round: " + s.message());
  return Status::OK();
}

ResponseList Controller::decode_header() const {
  ResponseList list;
  const int64_t shutdowns = vector_[round_counts::kShutdownCount];
  list.shutdown = shutdowns > 0;
  if (shutdowns == 1)
    list.shutdown_by = "rank " + std::to_string(vector_[round_counts::kShutdownRankSum]);
  else if (shutdowns > 1)
    list.shutdown_by = std::to_string(shutdowns) + " ranks";
  list.pause = vector_[round_counts::kPauseCount] == comm_.size();
  return list;
}

void Controller::decode_positions(std::vector<Request>& outgoing) {
  const int size = comm_.size();
  agreed_.clear();
  // No rank set a position word: nothing is agreed or invalidated (a round that only waits or
  // coordinates skips the pass over every position).
  const int scanned = vector_[round_counts::kPositionRanks] > 0 ? cache_.position_count() : 0;
  // Alone (not joined), only this rank's words are set: its waiting and invalidated positions
  // are visited, in position order, instead of every position.
  const bool alone = size == 1 && !joined_ && scanned > 0;
  std::vector<int>& visit = visit_;
  visit.clear();
  if (alone) {
    visit.insert(visit.end(), held_.begin(), held_.end());
    visit.insert(visit.end(), invalidate_.begin(), invalidate_.end());
    std::sort(visit.begin(), visit.end());
    visit.erase(std::unique(visit.begin(), visit.end()), visit.end());
  }
  const int visits = alone ? static_cast<int>(visit.size()) : scanned;
  for (int v = 0; v < visits; ++v) {
    const int p = alone ? visit[v] : v;
    const int64_t word = vector_[kHeader + p];
    if (word == 0) continue;  // nobody holds, is ready for or invalidates it
    const round_counts::PositionCounts c = round_counts::decode_position(word, size);
    if (c.invalidated > 0) {
      // Erased everywhere; a holder here resubmits in this round's exchange.
      if (waiting_at(p) != nullptr) send_to_coordinator(p, outgoing);
      cache_.erase(p);
    } else if (c.ready == size && c.held > 0 && cache_.in_use(p)) {
      agreed_.push_back(p);
    }
  }
}

Controller::KeptList* Controller::kept_for(uint64_t generation) {
  for (KeptList& k : kept_)
    if (k.id != 0 && k.generation == generation && k.positions == agreed_) return &k;
  return nullptr;
}

bool Controller::list_agreed(uint64_t generation, ResponseList* list) {
  // A group leaves the cache path only whole.
  std::map<std::string, int> group_agreed;
  for (int p : agreed_)
    if (cache_.at(p).group_size > 0) ++group_agreed[cache_.at(p).group_key];
  // A list kept from an earlier round again (a training loop's next step): its responses are
  // still the cache's at these positions (no insert or erase since), so they are reused
  // instead of copied.
  KeptList* again = group_agreed.empty() && !agreed_.empty() ? kept_for(generation) : nullptr;
  std::vector<int>& listed = listed_;  // the positions of the list's responses, in order
  listed.clear();
  if (again != nullptr) {
    list->responses.swap(again->responses);
    listed.swap(again->positions);
    out_.id = again->id;
    again->id = 0;  // lent to this list until recycle() hands it back
    for (size_t i = 0; i < listed.size(); ++i) take_hit(listed[i], list->responses[i]);
    return true;
  }
  list->responses.reserve(agreed_.size());
  for (int p : agreed_) {
    const Response& r = cache_.at(p);
    if (r.group_size > 0 && group_agreed[r.group_key] < r.group_size) continue;
    if (spare_names_.empty()) {
      list->responses.push_back(r);
    } else {
      // The name copied into a spare buffer (large enough: names are reused step by step).
      Response& hit = list->responses.emplace_back();
      hit.name = std::move(spare_names_.back());
      spare_names_.pop_back();
      hit = r;
    }
    listed.push_back(p);
    take_hit(p, list->responses.back());
  }
  out_.id = ++next_list_id_;
  return false;
}

void Controller::take_hit(int p, Response& response) {
  cache_.touch(p);
  Waiting* w = waiting_at(p);
  // A joined rank is ready without waiting there: no entry (a reused response may hold an
  // earlier step's).
  response.local_entry = w != nullptr ? w->request->local_entry : nullptr;
  if (w == nullptr) return;
  leave(p);
  ++stats_.cache_hits;
}

void Controller::recycle(ResponseList& list) {
  if (list.cached_id == 0 || list.cached_id != out_.id) {
    keep_names(list.responses);
    return;
  }
  // Kept in a free slot, else in place of the least recently kept list (its names become
  // spares).
  KeptList* slot = &kept_[0];
  for (KeptList& k : kept_) {
    if (k.id == 0) {
      slot = &k;
      break;
    }
    if (k.kept < slot->kept) slot = &k;
  }
  keep_names(slot->responses);
  slot->responses.swap(list.responses);
  slot->positions.swap(out_.positions);
  slot->generation = out_.generation;
  slot->id = out_.id;
  slot->kept = ++kept_count_;
  out_.id = 0;
}

void Controller::keep_names(std::vector<Response>& responses) {
  static const size_t kInline = std::string().capacity();
  // Bounded: a round never agrees more than the cache holds, and names beyond that would only
  // be kept, never used.
  const size_t keep = static_cast<size_t>(std::max<int64_t>(options_.cache_capacity, 1));
  for (Response& r : responses) {
    if (spare_names_.size() >= keep) break;
    if (r.name.capacity() > kInline) spare_names_.push_back(std::move(r.name));
  }
}

void Controller::mark_ready(int rank, const std::vector<Request>& requests,
                            std::chrono::steady_clock::time_point at) {
  Timeline* t = options_.timeline;
  if (t == nullptr || !t->enabled()) return;
  const std::string label = "rank " + std::to_string(rank) + " ready";
  for (const Request& q : requests) t->mark(q.name, label, at);
}

Status Controller::exchange(std::vector<Request>& outgoing, const std::string& fatal,
                            Deadline deadline, ResponseList* list) {
  const int rank = comm_.rank();
  const int size = comm_.size();
  // A join's wait on this rank, up to the moment it goes to the coordinator (the round's
  // counts allreduce before this may have held it for long): Coordinator::ingest subtracts it.
  const auto sent_at = std::chrono::steady_clock::now();
  for (Request& q : outgoing)
    if (q.type == CollectiveType::kJoin && q.local_entry != nullptr)
      q.waited_us = std::max<int64_t>(0, std::chrono::duration_cast<std::chrono::microseconds>(
                                             sent_at - q.local_entry->enqueued)
                                             .count());
  std::vector<uint8_t> payload;
  if (rank != 0) {
    std::vector<uint8_t> bytes = encode_requests(outgoing);
    uint64_t length = bytes.size();
    HORA_RETURN_IF_ERROR(comm_.send(0, &length, sizeof(length), kControlTag, deadline));
    HORA_RETURN_IF_ERROR(comm_.send(0, bytes.data(), bytes.size(), kControlTag, deadline));
  } else {
    coordinator_->ingest(0, outgoing, sent_at);
    mark_ready(0, outgoing, sent_at);
    std::vector<uint8_t> bytes;
    for (int r = 1; r < size; ++r) {
      uint64_t length = 0;
      HORA_RETURN_IF_ERROR(comm_.recv(r, &length, sizeof(length), kControlTag, deadline));
      if (length > (uint64_t{1} << 30))
        return Status::internal("corrupted control message from rank " + std::to_string(r) +
                                ": request list of " + std::to_string(length) + " bytes");
      bytes.resize(length);
      HORA_RETURN_IF_ERROR(comm_.recv(r, bytes.data(), length, kControlTag, deadline));
      auto requests = decode_requests(bytes);
      if (!requests.ok())
        return Status(requests.status().code(),
                      "from rank " + std::to_string(r) + ": " + requests.status().message());
      // Each rank's requests arrive when its message did (a join's wait is counted back from
      // there).
      const auto arrived = std::chrono::steady_clock::now();
      coordinator_->ingest(r, *requests, arrived);
      mark_ready(r, *requests, arrived);
    }
    ResponseList decided;
    decided.responses = coordinator_->collect();
    decided.fatal = fatal;
    // Alone, nothing goes on the wire: the list is used as it is, not encoded and decoded.
    if (size == 1) return apply(std::move(decided), list);
    payload = encode_response_list(decided);
  }
  if (size > 1) {
    collectives::AlgorithmOptions ao;
    ao.deadline = deadline;
    ao.tag = kControlTag;
    uint64_t length = payload.size();
    HORA_RETURN_IF_ERROR(
        collectives::pipelined_broadcast(comm_, &length, &length, 1, DataType::kInt64, 0, ao));
    if (length > (uint64_t{1} << 30))
      return Status::internal("corrupted response list header: " + std::to_string(length) +
                              " bytes");
    payload.resize(length);
    HORA_RETURN_IF_ERROR(collectives::pipelined_broadcast(comm_, payload.data(), payload.data(),
                                                          length, DataType::kUint8, 0, ao));
  }
  HORA_ASSIGN_OR_RETURN(ResponseList decided, decode_response_list(payload));
  return apply(std::move(decided), list);
}

Status Controller::apply(ResponseList decided, ResponseList* list) {
  for (Response& r : decided.responses) {
    if (sent_.erase(r.name) > 0) ++stats_.coordinated;
    if (r.type == CollectiveType::kJoin) joined_ = false;
    if (cache_enabled_ && ResponseCache::cacheable(r) && cache_.find(r.name) < 0) {
      int evicted = -1;
      cache_.insert(r, &evicted);
      stats_.evictions = cache_.evictions();
      if (evicted >= 0 && waiting_at(evicted) != nullptr) send_to_coordinator(evicted, resubmit_);
    }
    list->responses.push_back(std::move(r));
  }
  if (!decided.fatal.empty()) list->fatal = decided.fatal;
  return Status::OK();
}

}  // namespace engine
}  // namespace hora
