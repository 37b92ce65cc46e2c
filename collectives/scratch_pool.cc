#include "collectives/scratch_pool.h"

#include "hora/logging.h"

namespace hora {
namespace collectives {

uint8_t* ScratchPool::acquire(int slot, size_t bytes) {
  HORA_CHECK(slot >= 0 && slot < kNumSlots) << "scratch slot " << slot;
  Slot& s = slots_[slot];
  if (bytes > s.bytes || !s.data) {
    // Grow geometrically so a slowly rising size does not regrow every call.
    size_t grown = s.bytes + s.bytes / 2;
    size_t want = bytes > grown ? bytes : grown;
    if (want == 0) want = 64;
    // make_unique value-initialises (zero-fills): the pages are faulted in now, not inside
    // a collective.
    s.data = std::make_unique<uint8_t[]>(want);
    s.bytes = want;
    ++grow_count_;
  }
  return s.data.get();
}

std::vector<std::unique_ptr<Request>>& ScratchPool::requests(int list) {
  HORA_CHECK(list >= 0 && list < 2) << "request list " << list;
  requests_[list].clear();
  return requests_[list];
}

size_t ScratchPool::held_bytes() const {
  size_t total = 0;
  for (const Slot& s : slots_) total += s.bytes;
  return total;
}

}  // namespace collectives
}  // namespace hora
