// ScratchPool: the reusable scratch memory of hora's collective algorithms.
//
// An algorithm asks for numbered slots of bytes; a slot's buffer only grows, so after the
// first call at a given size no collective allocates or first-touches memory again (the
// point of the pool: fresh pages cost about 3 s per GiB to fault in on this kind of
// machine). Grown buffers are zero-filled at once, so the page faults happen at growth time,
// never in the middle of a timed collective. The pool also keeps a reusable list for the
// Request objects an algorithm keeps in flight.
//
// Ownership: one pool per communicator, owned by whoever owns the communicator (the
// executor, a benchmark, a test) and passed to the algorithms in AlgorithmOptions::scratch.
// Thread-safety: none; it is used by the one thread that uses the communicator. Contents are
// not preserved across calls or across growth.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "collectives/communicator.h"

namespace hora {
namespace collectives {

class ScratchPool {
 public:
  // Slots used by the algorithms in collectives/algorithms/ (each uses at most kNumSlots).
  static constexpr int kNumSlots = 4;

  ScratchPool() = default;
  ScratchPool(const ScratchPool&) = delete;
  ScratchPool& operator=(const ScratchPool&) = delete;

  // Returns a buffer of at least `bytes` bytes for `slot` (0 <= slot < kNumSlots), valid until
  // the next call for the same slot with a larger size. Grows (and pre-faults) when needed.
  uint8_t* acquire(int slot, size_t bytes);

  // A cleared list for outstanding requests; its capacity is kept between calls.
  std::vector<std::unique_ptr<Request>>& requests(int list);

  // Bytes currently held, and how many times any buffer grew (tests check warm-up).
  size_t held_bytes() const;
  uint64_t grow_count() const { return grow_count_; }

 private:
  struct Slot {
    std::unique_ptr<uint8_t[]> data;
    size_t bytes = 0;
  };
  Slot slots_[kNumSlots];
  std::vector<std::unique_ptr<Request>> requests_[2];
  uint64_t grow_count_ = 0;
};

}  // namespace collectives
}  // namespace hora
