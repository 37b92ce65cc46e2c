#include "core/engine/name_table.h"

namespace hora {
namespace engine {

int32_t NameTable::intern(const std::string& name, bool* added) {
  int32_t id = last_ >= 0 ? next_[static_cast<size_t>(last_)] : -1;
  // A guess whose id was forgotten (null) or went to another name falls back to the hash.
  if (id >= 0 && names_[static_cast<size_t>(id)] != nullptr &&
      *names_[static_cast<size_t>(id)] == name) {
    *added = false;
    last_ = id;
    return id;
  }
  auto [it, is_new] = ids_.try_emplace(name, -1);
  *added = is_new;
  if (is_new) {
    if (free_.empty()) {
      it->second = static_cast<int32_t>(names_.size());
      names_.push_back(&it->first);
      next_.push_back(-1);
    } else {
      it->second = free_.back();
      free_.pop_back();
      names_[static_cast<size_t>(it->second)] = &it->first;
      next_[static_cast<size_t>(it->second)] = -1;
    }
  }
  id = it->second;
  if (last_ >= 0) next_[static_cast<size_t>(last_)] = id;
  last_ = id;
  return id;
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
