// ResponseCache: responses agreed before, by name, at fixed positions, so that a tensor seen
// before is agreed by one small reduction over a per-position vector (Controller) instead of
// a trip through the coordinator.
//
// Every rank applies the same operations in the same order (inserts of the coordinator's
// responses, touches and erases of agreed or invalidated positions, all decided by the round's
// shared result), so the caches, their positions and their evictions are identical on every
// rank without ever being exchanged. Eviction is least-recently-used, by a use counter the
// rounds advance identically. Capacity 0 disables caching.
//
// Cacheable: OK responses of allreduce, broadcast and reducescatter (their parameters are
// the same on every rank); allgather and alltoall sizes vary per step and always go through
// the coordinator. Background thread only.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

#include "core/engine/message.h"

namespace hora {
namespace engine {

class ResponseCache {
 public:
  explicit ResponseCache(int64_t capacity) : capacity_(capacity < 0 ? 0 : capacity) {}

  static bool cacheable(const Response& r);
  // True when `request` asks exactly for what `response` agreed (same name, collective, dtype,
  // shape, device, op, root, scales, group).
  static bool matches(const Request& request, const Response& response);
  // matches() but for the name, which the caller knows equal (a position find() returned for
  // the request's name).
  static bool matches_found(const Request& request, const Response& response);

  // The position of `name`, or -1.
  int find(const std::string& name) const;
  // The same, with `name_id` the name's id in this rank's queue (Request::name_id; -1: none):
  // a name found once under its id is found again by the id and one comparison of the name,
  // without hashing it. An id forgotten and given to another name, or a position erased since,
  // only costs the lookup by name.
  int find(const std::string& name, int32_t name_id);
  // Whether `request` asks exactly for what its name's cached response agreed (matches());
  // *position receives the name's position either way (-1: not cached). A request with the
  // version (Request::version) of one that matched a position, whose response has not changed
  // since, matches it again by that alone: a training step's requests, the same step after
  // step, are found without hashing or comparing their names and fields.
  bool lookup(const Request& request, int* position);
  const Response& at(int position) const { return slots_[position].response; }
  bool in_use(int position) const { return slots_[position].in_use; }
  // Positions ever assigned (the length of the round's vector); identical on every rank.
  int position_count() const { return static_cast<int>(slots_.size()); }

  // Stores `response` (REQUIRES: cacheable, name not present). Returns the position it got
  // and, through `evicted`, the position whose entry was evicted to make room (or -1).
  // Returns -1 without storing when the capacity is 0.
  int insert(const Response& response, int* evicted);
  void touch(int position);
  void erase(int position);
  int64_t evictions() const { return evictions_; }
  // Advances on every change of a position's response (insert, erase; not touch): a position
  // read at one generation holds the same response while the generation stays.
  uint64_t generation() const { return generation_; }

 private:
  struct Slot {
    Response response;
    bool in_use = false;
  };
  // By queue name id: the position last found for it, and the request version that matched
  // the response there with that position's stamp at the time (version 0: none).
  struct ById {
    int position = -1;
    uint32_t version = 0;
    uint64_t stamp = 0;
  };
  const int64_t capacity_;
  std::vector<Slot> slots_;
  std::vector<int> free_;  // erased positions, reused lowest first
  std::unordered_map<std::string, int> by_name_;
  std::vector<ById> by_id_;
  // By position, apart from the slots (a Response is hundreds of bytes), so that a step's
  // lookups and touches go through dense arrays instead of a cache line per tensor: when the
  // response there last changed (generation_), and when it was last used (clock_).
  std::vector<uint64_t> stamps_;
  std::vector<uint64_t> last_used_;
  uint64_t clock_ = 0;
  int64_t evictions_ = 0;
  uint64_t generation_ = 0;
};

}  // namespace engine
}  // namespace hora
