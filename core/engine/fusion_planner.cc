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

// The unit a group member belongs to: its group's members of one dtype and device (a group
// shares op, scales and compression; members of other dtypes form units of their own, since
// one bucket reduces one dtype).
std::string group_unit_key(const Response& r) {
  return r.group_key + '\0' + std::to_string(static_cast<int>(r.dtype)) + '\0' +
         r.device.to_string();
}

}  // namespace

int64_t response_bytes(const Response& r) {
  return r.element_count() *
         static_cast<int64_t>(data_type_bytes(wire_data_type(r.dtype, r.compression)));
}

std::vector<Bucket> plan_buckets(const std::vector<Response>& responses, int64_t threshold_bytes) {
  FusionPlanner planner;
  return planner.plan(responses, threshold_bytes);
}

// Responses to units: a group's members of one dtype and device (wherever they sit in the
// list) join the unit of the first of them. One flat array of members, not a vector per unit
// (a step plans hundreds of responses).
void FusionPlanner::make_units(const std::vector<Response>& responses) {
  const int n = static_cast<int>(responses.size());
  units_.clear();
  unit_of_.clear();
  std::map<std::string, int> group_unit;  // grouped lists only (empty: no allocation)
  for (int i = 0; i < n; ++i) {
    const Response& r = responses[i];
    if (fusible(r) && r.group_size > 0) {
      if (unit_of_.empty()) {
        unit_of_.resize(responses.size());
        for (int k = 0; k < i; ++k) unit_of_[k] = k;  // every unit before was one response
      }
      const std::string key = group_unit_key(r);
      auto it = group_unit.find(key);
      if (it != group_unit.end()) {
        unit_of_[i] = it->second;
        ++units_[it->second].count;
        units_[it->second].bytes += response_bytes(r);
        continue;
      }
      group_unit[key] = static_cast<int>(units_.size());
    }
    if (!unit_of_.empty()) unit_of_[i] = static_cast<int>(units_.size());
    Unit u;
    u.count = 1;
    u.head = i;
    u.fusible = fusible(r);
    u.bytes = u.fusible ? response_bytes(r) : 0;
    units_.push_back(u);
  }
  members_.resize(responses.size());
  if (unit_of_.empty()) {  // no groups: unit i is response i
    for (int i = 0; i < n; ++i) {
      units_[i].begin = i;
      members_[i] = i;
    }
    return;
  }
  int begin = 0;
  for (Unit& u : units_) {
    u.begin = begin;
    begin += u.count;
    u.count = 0;  // refilled below
  }
  for (int i = 0; i < n; ++i) {
    Unit& u = units_[unit_of_[i]];
    members_[u.begin + u.count++] = i;
  }
}

const std::vector<Bucket>& FusionPlanner::plan(const std::vector<Response>& responses,
                                               int64_t threshold_bytes, uint64_t cached_id,
                                               bool repeated) {
  if (repeated) {
    for (Kept& k : kept_)
      if (k.id == cached_id && k.count == responses.size() && k.threshold == threshold_bytes)
        return k.buckets;
  }
  // The last plan's member lists keep their capacity for this one's buckets.
  for (Bucket& b : buckets_) {
    b.members.clear();
    spare_members_.push_back(std::move(b.members));
  }
  buckets_.clear();
  make_units(responses);
  used_.assign(units_.size(), 0);
  auto add = [&](Bucket& b, const Unit& u) {
    if (u.count == 1) {
      b.members.push_back(members_[u.begin]);  // most units: one response
    } else {
      b.members.insert(b.members.end(), members_.begin() + u.begin,
                       members_.begin() + u.begin + u.count);
    }
    b.bytes += u.bytes;
  };
  for (size_t i = 0; i < units_.size(); ++i) {
    if (used_[i]) continue;
    used_[i] = 1;
    Bucket& b = buckets_.emplace_back();
    if (!spare_members_.empty()) {
      b.members = std::move(spare_members_.back());
      spare_members_.pop_back();
    }
    // Room for every unit after this one (they usually all fit).
    if (units_[i].fusible)
      b.members.reserve(members_.size() - static_cast<size_t>(units_[i].begin));
    add(b, units_[i]);
    if (units_[i].fusible) {
      const Response& head = responses[units_[i].head];
      int misses = 0;
      for (size_t j = i + 1; j < units_.size() && misses < 2; ++j) {
        if (used_[j]) continue;
        const Response& r = responses[units_[j].head];
        if (!units_[j].fusible || !compatible(head, r)) {
          ++misses;
          continue;
        }
        misses = 0;
        // Full: the next compatible unit starts the next bucket (as Horovod does). Scanning on
        // for a smaller one would make planning quadratic in the tensors of a round.
        if (b.bytes + units_[j].bytes > threshold_bytes) break;
        used_[j] = 1;
        add(b, units_[j]);
      }
    }
  }
  if (cached_id == 0) return buckets_;
  // Kept in place of the least recently kept plan (whose member lists it reuses).
  Kept* slot = &kept_[0];
  for (Kept& k : kept_)
    if (k.kept < slot->kept) slot = &k;
  slot->id = cached_id;
  slot->count = responses.size();
  slot->threshold = threshold_bytes;
  slot->buckets = buckets_;
  slot->kept = ++kept_count_;
  return slot->buckets;
}

}  // namespace engine
}  // namespace hora
