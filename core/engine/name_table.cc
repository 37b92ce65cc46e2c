#include "core/engine/name_table.h"

namespace hora {
namespace engine {

int32_t NameTable::intern(const std::string& name, bool* added) {
  auto [it, is_new] = ids_.try_emplace(name, -1);
  *added = is_new;
  if (!is_new) return it->second;
  if (free_.empty()) {
    it->second = static_cast<int32_t>(names_.size());
    names_.push_back(&it->first);
  } else {
    it->second = free_.back();
    free_.pop_back();
    names_[static_cast<size_t>(it->second)] = &it->first;
  }
  return it->second;
}

int32_t NameTable::find(const std::string& name) const {
  auto it = ids_.find(name);
  return it == ids_.end() ? -1 : it->second;
}

void NameTable::forget(int32_t id) {
  const std::string*& key = names_[static_cast<size_t>(id)];
  ids_.erase(ids_.find(*key));  // by iterator: the key is the node's own, destroyed here
  key = nullptr;
  free_.push_back(id);
}

}  // namespace engine
}  // namespace hora
