// FusionPlanner: turns a ResponseList into the buckets the Executor runs, in order.
//
// Consecutive compatible allreduce responses (same dtype, device, op, scale factors and
// compression, no error) are packed into one bucket while the total stays within
// HORA_FUSION_THRESHOLD bytes; the first compatible response that does not fit starts the next
// bucket, so planning is linear in the length of the list. The scan looks past one incompatible
// response (mixed precision interleaves float16 and float32 gradients) and stops at the second in a
// row. The members of a grouped allreduce form one unit that is never split (a group larger than
// the threshold gets a bucket of its own). Every other response (errors, other collectives) is a
// bucket of one, at its place. A pure function of the list and the threshold, so every rank plans
// the same buckets.
#pragma once

#include <array>
#include <cstdint>
#include <vector>

#include "core/engine/message.h"

namespace hora {
namespace engine {

struct Bucket {
  std::vector<int> members;  // indices into the ResponseList
  int64_t bytes = 0;         // allreduce payload of the bucket
};

std::vector<Bucket> plan_buckets(const std::vector<Response>& responses, int64_t threshold_bytes);

// The same plans, in memory kept from call to call (the Executor plans every round): once it
// reached a round's size, planning allocates nothing.
class FusionPlanner {
 public:
  // The buckets of `responses`, valid until the next call. `cached_id` and `repeated` are the
  // list's (ResponseList): the plan of a list with an id is kept, and a repeated list gets
  // the plan kept under its id as it is (when that list was as long and planned under the same
  // threshold). The last kKeptLists ids' plans are kept, as the controller keeps their lists.
  const std::vector<Bucket>& plan(const std::vector<Response>& responses, int64_t threshold_bytes,
                                  uint64_t cached_id = 0, bool repeated = false);

 private:
  // A unit: responses planned together (one response, or a group's members of one dtype and
  // device). Its members are members_[begin, begin + count).
  struct Unit {
    int begin = 0;
    int count = 0;
    int head = 0;  // its first response
    int64_t bytes = 0;
    bool fusible = false;
  };

  void make_units(const std::vector<Response>& responses);

  std::vector<Unit> units_;
  std::vector<int> members_;  // every unit's members, unit after unit, each in list order
  std::vector<int> unit_of_;  // grouped lists only: the unit of each response
  std::vector<char> used_;
  std::vector<Bucket> buckets_;                  // the last plan
  std::vector<std::vector<int>> spare_members_;  // earlier buckets' member lists (emptied)
  // Plans of lists with an id, for those lists repeated.
  struct Kept {
    uint64_t id = 0;   // 0: none here
    size_t count = 0;  // responses in the list
    int64_t threshold = 0;
    std::vector<Bucket> buckets;
    uint64_t kept = 0;  // when (the least recent is replaced)
  };
  std::array<Kept, kKeptLists> kept_;
  uint64_t kept_count_ = 0;
};

// Bytes of one rank's contribution to an allreduce response in the fusion buffer: in the
// wire type, so a compressed float32 tensor counts two bytes per element.
int64_t response_bytes(const Response& r);

}  // namespace engine
}  // namespace hora
