#include "core/engine/response_cache.h"

#include <algorithm>

#include "hora/logging.h"

namespace hora {
namespace engine {

bool ResponseCache::cacheable(const Response& r) {
  if (r.is_error()) return false;
  return r.type == CollectiveType::kAllreduce || r.type == CollectiveType::kBroadcast ||
         r.type == CollectiveType::kReducescatter;
}

bool ResponseCache::matches(const Request& q, const Response& r) {
  return q.name == r.name && matches_found(q, r);
}

bool ResponseCache::matches_found(const Request& q, const Response& r) {
  return q.type == r.type && q.dtype == r.dtype && q.shape == r.shape &&
         q.device.kind == r.device.kind && q.op == r.op && q.root == r.root &&
         q.prescale == r.prescale && q.postscale == r.postscale && q.compression == r.compression &&
         q.group_size == r.group_size && q.group_key == r.group_key;
}

int ResponseCache::find(const std::string& name) const {
  auto it = by_name_.find(name);
  return it == by_name_.end() ? -1 : it->second;
}

int ResponseCache::find(const std::string& name, int32_t name_id) {
  if (name_id < 0) return find(name);
  const size_t id = static_cast<size_t>(name_id);
  if (id < by_id_.size()) {
    const int p = by_id_[id].position;
    if (p >= 0 && slots_[p].in_use && slots_[p].response.name == name) return p;
  } else {
    by_id_.resize(id + 1);
  }
  const int p = find(name);
  by_id_[id] = ById{p};  // no version matched there yet
  return p;
}

bool ResponseCache::lookup(const Request& q, int* position) {
  const bool versioned = q.version != 0 && q.name_id >= 0;
  const size_t id = static_cast<size_t>(q.name_id);
  if (versioned && id < by_id_.size()) {
    const ById& e = by_id_[id];
    // The stamp changes with every insert and erase at the position: the response there is the
    // one this version matched.
    if (e.version == q.version && e.position >= 0 && stamps_[e.position] == e.stamp) {
      *position = e.position;
      return true;
    }
  }
  *position = find(q.name, q.name_id);  // with a name id, by_id_ holds it from here on
  if (*position < 0 || !matches_found(q, slots_[*position].response)) return false;
  if (versioned) {
    by_id_[id].version = q.version;
    by_id_[id].stamp = stamps_[*position];
  }
  return true;
}

int ResponseCache::insert(const Response& response, int* evicted) {
  *evicted = -1;
  if (capacity_ == 0) return -1;
  int position;
  if (!free_.empty()) {
    auto lowest = std::min_element(free_.begin(), free_.end());
    position = *lowest;
    free_.erase(lowest);
  } else if (static_cast<int64_t>(slots_.size()) < capacity_) {
    position = static_cast<int>(slots_.size());
    slots_.emplace_back();
    stamps_.push_back(0);
    last_used_.push_back(0);
  } else {
    position = 0;
    for (int i = 1; i < static_cast<int>(slots_.size()); ++i)
      if (last_used_[i] < last_used_[position]) position = i;
    HORA_LOG(kDebug) << "response cache full (" << capacity_ << "): evicting '"
                     << slots_[position].response.name << "' for '" << response.name << "'";
    by_name_.erase(slots_[position].response.name);
    *evicted = position;
    ++evictions_;
  }
  Slot& slot = slots_[position];
  stamps_[position] = ++generation_;
  slot.response = response;
  slot.in_use = true;
  last_used_[position] = ++clock_;
  by_name_[response.name] = position;
  return position;
}

void ResponseCache::touch(int position) { last_used_[position] = ++clock_; }

void ResponseCache::erase(int position) {
  Slot& slot = slots_[position];
  if (!slot.in_use) return;
  by_name_.erase(slot.response.name);
  stamps_[position] = ++generation_;
  slot.in_use = false;
  slot.response = Response();
  free_.push_back(position);
}

}  // namespace engine
}  // namespace hora
