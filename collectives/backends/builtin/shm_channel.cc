#include "collectives/backends/builtin/shm_channel.h"

#include <linux/futex.h>
#include <signal.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "kernels/kernels.h"

namespace hora {
namespace collectives {
namespace builtin {
namespace {

constexpr uint64_t kShmMagic = 0x484f524153484d31ull;  // "HORASHM1"

struct Header {
  uint64_t magic;
  uint32_t local_size;
  uint32_t reserved;
  uint64_t ring_bytes;
  std::atomic<int32_t> pids[kShmMaxLocalRanks];
};
static_assert(sizeof(Header) <= 4096, "shm header must fit one page");
static_assert(std::atomic<uint32_t>::is_always_lock_free, "futex words must be lock-free");
static_assert(std::atomic<uint64_t>::is_always_lock_free, "ring counters must be lock-free");

size_t round_up(size_t v, size_t to) { return (v + to - 1) / to * to; }

size_t ring_index(int src, int dst, int n) {
  return static_cast<size_t>(src) * (n - 1) + (dst < src ? dst : dst - 1);
}

Header* header_of(void* base) { return static_cast<Header*>(base); }

}  // namespace

struct ShmDoorbell::Word {
  alignas(128) std::atomic<uint32_t> seq;
  std::atomic<uint32_t> waiting;
};

struct ShmLink::Control {
  alignas(128) std::atomic<uint64_t> head;
  alignas(128) std::atomic<uint64_t> tail;
};

ShmLayout ShmLayout::make(int local_size, size_t ring_bytes, size_t chunk_bytes) {
  ShmLayout l;
  l.local_size = local_size;
  const size_t pairs = local_size > 1 ? static_cast<size_t>(local_size) * (local_size - 1) : 0;
  if (ring_bytes == 0) {
    // 2 MiB per pair, shrinking so that the whole host stays under ~512 MiB, never below 256 KiB.
    ring_bytes = size_t{2} << 20;
    while (pairs > 0 && ring_bytes > (size_t{256} << 10) &&
           ring_bytes * pairs > (size_t{512} << 20))
      ring_bytes /= 2;
  }
  size_t pow2 = 4096;
  while (pow2 < ring_bytes) pow2 *= 2;
  l.ring_bytes = pow2;
  l.chunk_bytes = std::min(l.ring_bytes / 2, chunk_bytes == 0 ? size_t{64} << 10 : chunk_bytes);
  l.doorbell_offset = 4096;
  l.control_offset = round_up(l.doorbell_offset + sizeof(ShmDoorbell::Word) * local_size, 4096);
  l.ring_offset = round_up(l.control_offset + sizeof(ShmLink::Control) * pairs, 4096);
  l.total_bytes = l.ring_offset + l.ring_bytes * pairs;
  return l;
}

void init_shm_segment(void* base, const ShmLayout& layout) {
  Header* h = header_of(base);
  h->local_size = static_cast<uint32_t>(layout.local_size);
  h->ring_bytes = layout.ring_bytes;
  std::atomic_thread_fence(std::memory_order_release);
  h->magic = kShmMagic;
}

Status attach_shm_segment(void* base, const ShmLayout& layout, int local_index) {
  Header* h = header_of(base);
  if (h->magic != kShmMagic || h->local_size != static_cast<uint32_t>(layout.local_size) ||
      h->ring_bytes != layout.ring_bytes) {
    return Status::mismatch(
        "shared-memory segment header disagrees: local_size " + std::to_string(h->local_size) +
        " vs " + std::to_string(layout.local_size) + ", ring_bytes " +
        std::to_string(h->ring_bytes) + " vs " + std::to_string(layout.ring_bytes));
  }
  h->pids[local_index].store(static_cast<int32_t>(getpid()), std::memory_order_release);
  return Status::OK();
}

ShmDoorbell::ShmDoorbell(void* base, const ShmLayout& layout, int local_index)
    : word_(reinterpret_cast<Word*>(static_cast<uint8_t*>(base) + layout.doorbell_offset) +
            local_index) {}

uint32_t ShmDoorbell::arm() {
  uint32_t seq = word_->seq.load(std::memory_order_relaxed);
  word_->waiting.store(1, std::memory_order_relaxed);
  std::atomic_thread_fence(std::memory_order_seq_cst);
  return seq;
}

void ShmDoorbell::sleep(uint32_t seq, std::chrono::microseconds timeout) {
  struct timespec ts;
  ts.tv_sec = static_cast<time_t>(timeout.count() / 1000000);
  ts.tv_nsec = static_cast<long>((timeout.count() % 1000000) * 1000);
  // Not FUTEX_PRIVATE: the word is shared between processes.
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_->seq), FUTEX_WAIT, seq, &ts, nullptr, 0);
}

void ShmDoorbell::disarm() { word_->waiting.store(0, std::memory_order_relaxed); }

void ShmDoorbell::ring() {
  std::atomic_thread_fence(std::memory_order_seq_cst);
  if (word_->waiting.load(std::memory_order_relaxed) == 0) return;
  word_->seq.fetch_add(1, std::memory_order_seq_cst);
  syscall(SYS_futex, reinterpret_cast<uint32_t*>(&word_->seq), FUTEX_WAKE, 1, nullptr, nullptr, 0);
}

ShmLink::ShmLink(void* base, const ShmLayout& layout, int me, int peer, int peer_rank)
    : peer_bell_(base, layout, peer), peer_rank_(peer_rank) {
  auto* b = static_cast<uint8_t*>(base);
  auto* controls = reinterpret_cast<Control*>(b + layout.control_offset);
  const int n = layout.local_size;
  size_t tx = ring_index(me, peer, n);
  size_t rx = ring_index(peer, me, n);
  tx_ = controls + tx;
  rx_ = controls + rx;
  tx_ring_ = b + layout.ring_offset + tx * layout.ring_bytes;
  rx_ring_ = b + layout.ring_offset + rx * layout.ring_bytes;
  peer_pid_ = &header_of(base)->pids[peer];
  mask_ = layout.ring_bytes - 1;
  chunk_ = layout.chunk_bytes;
  tx_head_ = tx_->head.load(std::memory_order_relaxed);
  tx_tail_cached_ = tx_->tail.load(std::memory_order_acquire);
  rx_tail_ = rx_->tail.load(std::memory_order_relaxed);
  rx_head_cached_ = rx_->head.load(std::memory_order_acquire);
}

StatusOr<size_t> ShmLink::write_some(const ConstSpan* spans, int count) {
  const size_t capacity = mask_ + 1;
  size_t room = capacity - (tx_head_ - tx_tail_cached_);
  if (room < chunk_) {
    tx_tail_cached_ = tx_->tail.load(std::memory_order_acquire);
    room = capacity - (tx_head_ - tx_tail_cached_);
    if (room == 0) return size_t{0};
  }
  size_t budget = std::min(room, chunk_);
  size_t written = 0;
  for (int i = 0; i < count && budget > 0; ++i) {
    if (spans[i].bytes == 0) continue;  // its data may be null: nothing to copy
    const auto* src = static_cast<const uint8_t*>(spans[i].data);
    size_t n = std::min(budget, spans[i].bytes);
    size_t pos = tx_head_ & mask_;
    size_t first = std::min(n, capacity - pos);
    kernels::copy(tx_ring_ + pos, src, first);
    if (n > first) kernels::copy(tx_ring_, src + first, n - first);
    tx_head_ += n;
    written += n;
    budget -= n;
    if (n < spans[i].bytes) break;
  }
  if (written > 0) {
    tx_->head.store(tx_head_, std::memory_order_release);
    peer_bell_.ring();
  }
  return written;
}

StatusOr<size_t> ShmLink::read_some(void* data, size_t bytes) {
  size_t avail = rx_head_cached_ - rx_tail_;
  if (avail < bytes) {
    rx_head_cached_ = rx_->head.load(std::memory_order_acquire);
    avail = rx_head_cached_ - rx_tail_;
    if (avail == 0) return size_t{0};
  }
  const size_t capacity = mask_ + 1;
  size_t n = std::min({avail, bytes, chunk_});
  size_t pos = rx_tail_ & mask_;
  size_t first = std::min(n, capacity - pos);
  auto* out = static_cast<uint8_t*>(data);
  kernels::copy(out, rx_ring_ + pos, first);
  if (n > first) kernels::copy(out + first, rx_ring_, n - first);
  rx_tail_ += n;
  rx_->tail.store(rx_tail_, std::memory_order_release);
  peer_bell_.ring();
  return n;
}

Status ShmLink::check_alive() {
  int32_t pid = peer_pid_->load(std::memory_order_acquire);
  if (pid <= 0) return Status::OK();
  bool gone = false;
  if (kill(pid, 0) != 0 && errno == ESRCH) {
    gone = true;
  } else {
    // A killed child that its parent has not reaped yet is a zombie: gone for our purposes.
    char path[64];
    std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
    if (FILE* f = std::fopen(path, "r")) {
      char buf[512];
      size_t len = std::fread(buf, 1, sizeof buf - 1, f);
      std::fclose(f);
      buf[len] = 0;
      const char* close_paren = std::strrchr(buf, ')');
      if (close_paren != nullptr && (close_paren[2] == 'Z' || close_paren[2] == 'X')) gone = true;
    }
  }
  if (!gone) return Status::OK();
  return Status::remote("rank " + std::to_string(peer_rank_) + " (pid " + std::to_string(pid) +
                        ") died: its process is gone (shared-memory link)");
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
