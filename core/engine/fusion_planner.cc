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

// A unit: responses planned together (one response, or a group's members of one dtype and
// device). Its members are `members`[begin, begin + count) of make_units: one flat array, not a
// vector per unit (a step plans hundreds of responses).
struct Unit {
  int begin = 0;
  int count = 0;
  int head = 0;  // its first response
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
// list) join the unit of the first of them. `members` receives every unit's members, unit
// after unit, each in list order.
std::vector<Unit> make_units(const std::vector<Response>& responses, std::vector<int>* members) {
  const int n = static_cast<int>(responses.size());
  std::vector<Unit> units;
  units.reserve(responses.size());
  std::vector<int> unit_of;  // grouped lists only: the unit of each response
  std::map<std::string, int> group_unit;
  for (int i = 0; i < n; ++i) {
    const Response& r = responses[i];
    if (fusible(r) && r.group_size > 0) {
      if (unit_of.empty()) {
        unit_of.resize(responses.size());
        for (int k = 0; k < i; ++k) unit_of[k] = k;  // every unit before was one response
      }
      const std::string key = group_unit_key(r);
      auto it = group_unit.find(key);
      if (it != group_unit.end()) {
        unit_of[i] = it->second;
        ++units[it->second].count;
        units[it->second].bytes += response_bytes(r);
        continue;
      }
      group_unit[key] = static_cast<int>(units.size());
    }
    if (!unit_of.empty()) unit_of[i] = static_cast<int>(units.size());
    Unit u;
    u.count = 1;
    u.head = i;
    u.fusible = fusible(r);
    u.bytes = u.fusible ? response_bytes(r) : 0;
    units.push_back(u);
  }
  members->resize(responses.size());
  if (unit_of.empty()) {  // no groups: unit i is response i
    for (int i = 0; i < n; ++i) {
      units[i].begin = i;
      (*members)[i] = i;
    }
    return units;
  }
  int begin = 0;
  for (Unit& u : units) {
    u.begin = begin;
    begin += u.count;
    u.count = 0;  // refilled below
  }
  for (int i = 0; i < n; ++i) {
    Unit& u = units[unit_of[i]];
    (*members)[u.begin + u.count++] = i;
  }
  return units;
}

}  // namespace

int64_t response_bytes(const Response& r) {
  return r.element_count() *
         static_cast<int64_t>(data_type_bytes(wire_data_type(r.dtype, r.compression)));
}

std::vector<Bucket> plan_buckets(const std::vector<Response>& responses, int64_t threshold_bytes) {
  std::vector<int> members;
  std::vector<Unit> units = make_units(responses, &members);
  std::vector<bool> used(units.size(), false);
  std::vector<Bucket> buckets;
  auto add = [&](Bucket& b, const Unit& u) {
    b.members.insert(b.members.end(), members.begin() + u.begin,
                     members.begin() + u.begin + u.count);
    b.bytes += u.bytes;
  };
  for (size_t i = 0; i < units.size(); ++i) {
    if (used[i]) continue;
    used[i] = true;
    Bucket b;
    // Room for every unit after this one (they usually all fit): one allocation per bucket.
    if (units[i].fusible) b.members.reserve(members.size() - static_cast<size_t>(units[i].begin));
    add(b, units[i]);
    if (units[i].fusible) {
      const Response& head = responses[units[i].head];
      int misses = 0;
      for (size_t j = i + 1; j < units.size() && misses < 2; ++j) {
        if (used[j]) continue;
        const Response& r = responses[units[j].head];
        if (!units[j].fusible || !compatible(head, r)) {
          ++misses;
          continue;
        }
        misses = 0;
        // Full: the next compatible unit starts the next bucket (as Horovod does). Scanning on
        // for a smaller one would make planning quadratic in the tensors of a round.
        if (b.bytes + units[j].bytes > threshold_bytes) break;
        used[j] = true;
        add(b, units[j]);
      }
    }
    buckets.push_back(std::move(b));
  }
  return buckets;
}

}  // namespace engine
}  // namespace hora
