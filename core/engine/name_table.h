// NameTable: the names of the collectives this rank enqueues, each interned once as a small
// integer id, so that what follows the enqueue of a tensor (its queue slot, its removal, its
// response-cache position) indexes by id instead of hashing the name again: one string hash per
// tensor per step, at the enqueue.
//
// Ids are dense (0, 1, ...); a forgotten id goes to a later new name, so whoever keeps an id
// beyond the name's lifetime (the response cache's hint) checks the name it finds. Not
// thread-safe: the owner (TensorQueue) guards it with its mutex.
//
// A training loop enqueues its gradients' names in the same order every step, so intern()
// first tries the id that followed the previous name the last time (one string comparison)
// and hashes only when that guess is wrong.
#pragma once

#include <cstdint>
#include <string>
#include <unordered_map>
#include <vector>

namespace hora {
namespace engine {

class NameTable {
 public:
  // The id of `name`, interned now when it is new (then *added is true; an allocation only
  // then).
  int32_t intern(const std::string& name, bool* added);
  // The id of `name`, or -1 when it is not interned.
  int32_t find(const std::string& name) const;
  // Forgets `id` (REQUIRES: interned): its name is no longer interned, and a later new name
  // may get the id.
  void forget(int32_t id);
  // The name of `id` (REQUIRES: interned).
  const std::string& name(int32_t id) const { return *names_[static_cast<size_t>(id)]; }
  // How many names are interned now.
  size_t size() const { return ids_.size(); }
  // One past the largest id handed out so far (what an array indexed by id needs).
  int32_t id_bound() const { return static_cast<int32_t>(names_.size()); }

 private:
  std::unordered_map<std::string, int32_t> ids_;
  std::vector<const std::string*> names_;  // by id: its key in ids_ (null once forgotten)
  std::vector<int32_t> free_;              // forgotten ids, for later names
  // By id: the id interned right after it the last time (-1: none yet), and the last id
  // interned (-1: none).
  std::vector<int32_t> next_;
  int32_t last_ = -1;
};

}  // namespace engine
}  // namespace hora
