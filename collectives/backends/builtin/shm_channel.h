// Shared-memory channels between the ranks of one host, laid out in one ShmSegment:
//
//   [header: magic, local_size, ring_bytes, pid of each local rank]
//   [one doorbell per local rank]             futex word + "waiting" flag, 128-byte aligned
//   [one ring control per ordered pair]       head and tail on separate cache lines
//   [one ring of ring_bytes per ordered pair] src -> dst, single producer, single consumer
//
// A ring is a byte FIFO: the producer copies at most chunk_bytes then publishes head, so the
// consumer copies the first chunk out while the producer fills the next (copy pipelining).
// Waiting: a rank sleeps on its own doorbell (FUTEX_WAIT with a timeout) after arming its
// waiting flag; producers and consumers that move bytes for it call FUTEX_WAKE only when the
// flag is set (Dekker-style fences, no lost wake-ups), so an idle rank burns no CPU.
//
// Threads: a ShmLink is used by its owner's thread; Doorbell::ring may be called from any.
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>

#include "collectives/backends/builtin/byte_link.h"

namespace hora {
namespace collectives {
namespace builtin {

inline constexpr int kShmMaxLocalRanks = 512;

struct ShmLayout {
  int local_size = 0;
  size_t ring_bytes = 0;   // power of two
  size_t chunk_bytes = 0;  // at most ring_bytes; publish granularity
  size_t doorbell_offset = 0;
  size_t control_offset = 0;
  size_t ring_offset = 0;
  size_t total_bytes = 0;

  // ring_bytes == 0 picks a size from local_size (2 MiB per pair, less for many ranks).
  static ShmLayout make(int local_size, size_t ring_bytes, size_t chunk_bytes);
};

// Writes the header of a freshly zeroed segment (called by the creator only).
void init_shm_segment(void* base, const ShmLayout& layout);
// Checks the header written by the creator; records this rank's pid in it.
Status attach_shm_segment(void* base, const ShmLayout& layout, int local_index);

class ShmDoorbell {
 public:
  ShmDoorbell(void* base, const ShmLayout& layout, int local_index);
  // Arms the waiting flag and returns the sequence to sleep on; re-check for work after it.
  uint32_t arm();
  // Sleeps until woken, the sequence moved, or `timeout`.
  void sleep(uint32_t seq, std::chrono::microseconds timeout);
  void disarm();
  // Wakes the owner if it sleeps (any thread, any process).
  void ring();

  struct Word;  // defined in the .cc (the layout needs its size)

 private:
  Word* word_;
};

class ShmLink : public ByteLink {
 public:
  // The link of local rank `me` to local rank `peer` (global rank `peer_rank`, for messages).
  ShmLink(void* base, const ShmLayout& layout, int me, int peer, int peer_rank);

  StatusOr<size_t> write_some(const ConstSpan* spans, int count) override;
  StatusOr<size_t> read_some(void* data, size_t bytes) override;
  Status check_alive() override;
  int32_t peer_pid() const override { return peer_pid_->load(std::memory_order_acquire); }
  const char* kind() const override { return "shm"; }

  struct Control;  // defined in the .cc (the layout needs its size)

 private:
  Control* tx_;
  uint8_t* tx_ring_;
  Control* rx_;
  const uint8_t* rx_ring_;
  ShmDoorbell peer_bell_;
  const std::atomic<int32_t>* peer_pid_;
  size_t mask_;
  size_t chunk_;
  int peer_rank_;
  uint64_t tx_head_ = 0;         // our copy of tx head (we own it)
  uint64_t tx_tail_cached_ = 0;  // last tail seen
  uint64_t rx_tail_ = 0;         // our copy of rx tail (we own it)
  uint64_t rx_head_cached_ = 0;
};

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
