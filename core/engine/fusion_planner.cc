#include "core/engine/fusion_planner.h"

#include <map>
#include <string>

namespace hora {
namespace engine {
namespace {

bool fusible(const Response& r) { return r.type == CollectiveType::kAllreduce && !r.is_error(); }

bool compatible(const Response& a, const Response& b) {
  return a.dtype == b.dtype && a.device == b.device && a.op == b.op && a.prescale == b.prescale &&
         a.postscale == b.postscale && a.compression == b.compression;
}

struct Unit {
  std::vector<int> members;
  int64_t bytes = 0;
  bool fusible = false;
};

// The unit a group member belongs to: its group's members of one dtype and device (a group
// shares op, scales and compression; members of other dtypes form units of their own, since
// one bucket reduces one dtype).
std::string group_unit_key(const Response& r) {
  return r.group_key + '\0' + std::to_string(static_cast<int>(r.dtype)) + '\0' +
         r.device.to_string();
}

// Responses to units: a group's members of one dtype and device (wherever they sit in the
// list) join the unit of the first of them.
std::vector<Unit> make_units(const std::vector<Response>& responses) {
  std::vector<Unit> units;
  std::map<std::string, size_t> group_unit;
  for (int i = 0; i < static_cast<int>(responses.size()); ++i) {
    const Response& r = responses[i];
    if (fusible(r) && r.group_size > 0) {
      const std::string key = group_unit_key(r);
      auto it = group_unit.find(key);
      if (it != group_unit.end()) {
        units[it->second].members.push_back(i);
        units[it->second].bytes += response_bytes(r);
        continue;
      }
      group_unit[key] = units.size();
    }
    Unit u;
    u.members.push_back(i);
    u.fusible = fusible(r);
    u.bytes = u.fusible ? response_bytes(r) : 0;
    units.push_back(std::move(u));
  }
  return units;
}

}  // namespace

int64_t response_bytes(const Response& r) {
  return r.element_count() *
         static_cast<int64_t>(data_type_bytes(wire_data_type(r.dtype, r.compression)));
}

std::vector<Bucket> plan_buckets(const std::vector<Response>& responses, int64_t threshold_bytes) {
  std::vector<Unit> units = make_units(responses);
  std::vector<bool> used(units.size(), false);
  std::vector<Bucket> buckets;
  for (size_t i = 0; i < units.size(); ++i) {
    if (used[i]) continue;
    used[i] = true;
    Bucket b;
    b.members = units[i].members;
    b.bytes = units[i].bytes;
    if (units[i].fusible) {
      const Response& head = responses[units[i].members.front()];
      int misses = 0;
      for (size_t j = i + 1; j < units.size() && misses < 2; ++j) {
        if (used[j]) continue;
        const Response& r = responses[units[j].members.front()];
        if (!units[j].fusible || !compatible(head, r)) {
          ++misses;
          continue;
        }
        misses = 0;
        // Full: the next compatible unit starts the next bucket (as Horovod does). Scanning on
        // for a smaller one would make planning quadratic in the tensors of a round.
        if (b.bytes + units[j].bytes > threshold_bytes) break;
        used[j] = true;
        b.members.insert(b.members.end(), units[j].members.begin(), units[j].members.end());
        b.bytes += units[j].bytes;
      }
    }
    buckets.push_back(std::move(b));
  }
  return buckets;
}

}  // namespace engine
}  // namespace hora
