// TensorQueue: where framework threads leave named collectives for the background thread.
//
// One mutex guards everything; critical sections are a map insert or a vector swap, never
// I/O. enqueue() adds a batch atomically (a grouped allreduce enters one round as a unit) and
// wakes the background thread; take_new() hands it the requests added since the last call.
// Entries stay in the table until the background thread removes them after completing their
// handles, so a name in flight cannot be enqueued again (an error at enqueue on that rank).
//
// Each name is interned once (NameTable) and its entry lives in a slot indexed by the name's id,
// reused step after step: enqueue hashes the name once, and removal, the executor's lookups and
// the response cache's go by id or by the entry's pointer. Pointers returned by find() stay
// valid until remove() of that name (slots never move), so the background thread uses entries
// without holding the lock while bytes move.
//
// Burst end: the engine (the handles' WaitSignal) calls waiting(). A thread that waits on a
// handle while requests are still untaken ends the burst (wait_in_burst returns true), because a
// caller that waits enqueues nothing more for now. take_new() resets it; a wait after the requests
// were taken (on the previous step's handles) says nothing about the next burst.
#pragma once

#include <chrono>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "core/engine/handle_state.h"
#include "core/engine/message.h"
#include "core/engine/name_table.h"
#include "core/engine/ready_events.h"
#include "hora/mutex.h"
#include "hora/status.h"
#include "hora/tensor_view.h"
#include "hora/thread_annotations.h"
#include "hora/types.h"

namespace hora {
namespace engine {

using Clock = std::chrono::steady_clock;

struct Entry {
  // First: what completion and removal touch once the bucket's data went through (and the
  // entry out of cache), beside the slot's flags (TensorQueue::Slot).
  std::shared_ptr<detail::HandleState> handle;
  // allgather, alltoall, reducescatter: where the result goes (hora/types.h); empty: into
  // the handle's output. Called on the thread that runs the round (Engine::step).
  OutputAllocator allocate;
  Clock::time_point enqueued;
  TensorView in;
  TensorView out;  // allreduce: where the result goes; broadcast: the tensor itself
  Request request;
  // A device input: where it is ready on its framework's stream (DeviceExecutor::admit).
  ReadyEvents::Ready ready;
};

// A single allreduce of host tensors, as the API hands it over: the queue fills its name's
// slot from it (no Entry built in a batch, moved into the slot and destroyed on the way). The
// pointers need only live through the call.
struct AllreduceSpec {
  const std::string* name = nullptr;
  const TensorView* in = nullptr;
  const TensorView* out = nullptr;
  std::shared_ptr<detail::HandleState> handle;  // moved into the entry
  ReduceOp op = ReduceOp::kSum;
  double prescale = 1.0;
  double postscale = 1.0;
  Compression compression = Compression::kNone;
  Clock::time_point enqueued;  // Engine::enqueue_stamp(): zero unless the timeline uses it
};

class TensorQueue {
 public:
  // Adds every entry or none: fails when one of the names is already in flight (or appears
  // twice in the batch), or after close(), naming the tensor. The entries are moved from
  // (on failure some may be, and none is enqueued); the caller may clear the vector and reuse
  // its capacity.
  Status enqueue(std::vector<Entry>&& entries);
  // One allreduce of host tensors, its entry filled in place: the same as enqueue() of the
  // entry the API would build from `spec` (fails the same way; spec.handle is moved from only
  // on success).
  Status enqueue_allreduce(AllreduceSpec&& spec);

  // Background thread: blocks until new requests arrive, shutdown is requested, wake() is
  // called, or `until`. Returns true when there is something new (requests, a shutdown
  // request or a wake-up, which it consumes).
  bool wait_for_work(Clock::time_point until);
  // Makes the background thread's wait_for_work return now (the engine has something to ask
  // of the other ranks in its next round).
  void wake();
  // Copies of the requests enqueued since the last call, in enqueue order.
  std::vector<Request> take_new();
  // The same, as pointers to the requests in their entries, into *out, whose previous contents
  // are dropped and whose capacity the queue keeps for the next round's (a round's vector
  // swapped with the previous round's: no allocation per round once both reached a step's
  // size). Each request stays valid while its entry is in flight (until remove(), remove_all()
  // or close() takes it): the round reads it there and copies only what goes to the
  // coordinator.
  void take_new(std::vector<Request*>* out);
  // How many requests take_new() would return now.
  size_t fresh_count() const;
  // Background thread, during a burst: blocks until a thread waits on a handle while requests
  // are untaken (and wakes it: waiting()), shutdown is requested, wake() is called, or `until`.
  // Returns true when the burst is over (the first three; the wake-up is left for
  // wait_for_work or wait_after_help to consume); `fresh` receives fresh_count().
  bool wait_in_burst(Clock::time_point until, size_t* fresh);
  // How many take_new() calls ran so far (a burst's requests were taken when it changed).
  uint64_t takes() const;
  // Background thread, after a burst whose round a helping caller runs: blocks until wake()
  // (the helper left work), shutdown is requested, requests arrive after the burst's were
  // taken (take_new() ran since `takes` was read and the fresh list is not empty), or `until`.
  // Returns what ended it.
  enum class AfterHelp { kWoken, kFresh, kTimeout };
  AfterHelp wait_after_help(uint64_t takes, Clock::time_point until);
  // A thread started waiting on a handle that is not complete (Engine::waiting, any thread;
  // the handle's mutex may be held, this takes only the queue's): ends the burst, and wakes the
  // background thread when the untaken requests' work reaches `wake_at_bytes` (0: always): their
  // bytes plus kTensorBytes per request, what the engine's per-tensor cost is worth in bytes
  // moved. Otherwise it sees the burst over when its quiet window ends (a helping caller runs
  // the round meanwhile).
  static constexpr size_t kTensorBytes = 2048;
  void waiting(size_t wake_at_bytes = 0);

  Entry* find(const std::string& name);
  // Background thread: (*out)[i] = responses[i].local_entry, or find(responses[i].name) when
  // it is null (then under one lock for all of them).
  void find_all(const std::vector<Response>& responses, std::vector<Entry*>* out);
  void remove(const std::string& name);
  // Background thread: removes `entries` (from find or find_all, each at most once), under
  // one lock. The pointers are invalid afterwards.
  void remove_all(const std::vector<Entry*>& entries);
  size_t in_flight() const;

  // Asks the background thread to stop (it still runs the shutdown round).
  void request_shutdown();
  bool shutdown_requested() const;

  // Later enqueues fail with `why`. Returns the entries still in flight (removed from the
  // table) so the caller can fail their handles.
  std::vector<Entry> close(Status why);

 private:
  mutable Mutex mu_;  // guards everything below; never held while calling out
  CondVar cv_;        // fresh_ (empty to not), shutdown_requested_, woken_ changes
  CondVar burst_cv_;  // burst_over_, shutdown_requested_, woken_ changes (a separate variable, so
                      // enqueues during a burst do not wake the background thread)
  // An interned name's entry: in flight from its enqueue until its removal; the entry stays (its
  // handle and allocator released) to be overwritten by the name's next enqueue.
  struct Slot {
    // Before the entry (568 bytes): what a removal reads and writes beside the entry's handle.
    bool in_flight = false;
    uint32_t version = 0;  // the last Request::version given out here (never 0 once given)
    Entry entry;
  };
  // A new content version for the request in `slot` (it differs from the one before it).
  static void new_version(Slot& slot);
  // Ends the flight of the entry in slot `id` (REQUIRES: in flight): releases its handle and
  // allocator now (kept alive in an idle slot they would outlive the collective), and forgets
  // the name when more than kMaxNames are interned.
  void release(int32_t id) HORA_REQUIRES(mu_);
  // The slot of `name` for a new entry (interned now when new), or null with *error set when
  // the queue is closed or the name is in flight (`type`: what the refused call was). With
  // *interned false, the name had its id already, and its slot's request holds that name
  // (every enqueue of a name fills its slot, and an id goes to another name only once the
  // name was forgotten).
  Slot* claim(const std::string& name, CollectiveType type, int32_t* id, Status* error,
              bool* interned = nullptr) HORA_REQUIRES(mu_);
  // The entry in slot `id` is in flight from now: its request goes to the fresh list.
  void admit(int32_t id) HORA_REQUIRES(mu_);

  // Slots by name id, in chunks that never move as ids are added (requests and entries are
  // pointed at while in flight): an index is a shift and a mask (std::deque's took about 80
  // instructions per tensor over a step's accesses).
  class SlotTable {
   public:
    size_t size() const { return size_; }
    Slot& operator[](size_t id) { return chunks_[id >> kShift][id & (kChunk - 1)]; }
    // Slots [0, n) exist afterwards.
    void grow_to(size_t n) {
      while (chunks_.size() * kChunk < n) chunks_.push_back(std::make_unique<Slot[]>(kChunk));
      if (n > size_) size_ = n;
    }

   private:
    static constexpr size_t kShift = 6;
    static constexpr size_t kChunk = size_t{1} << kShift;
    std::vector<std::unique_ptr<Slot[]>> chunks_;
    size_t size_ = 0;
  };

  NameTable names_ HORA_GUARDED_BY(mu_);
  SlotTable slots_ HORA_GUARDED_BY(mu_);
  size_t in_flight_ HORA_GUARDED_BY(mu_) = 0;
  // Names kept interned while not in flight: a job's named tensors are interned once; beyond
  // this (unnamed calls draw a new name each), a name is forgotten when its entry leaves.
  static constexpr size_t kMaxNames = 4096;
  std::vector<int32_t> inserted_ HORA_GUARDED_BY(mu_);  // enqueue of a batch (reused)
  std::vector<Request*> fresh_ HORA_GUARDED_BY(mu_);    // in their entries' slots
  // The capacity an empty fresh_ starts with: the largest burst one take found, at most
  // kMaxFreshReserve requests.
  static constexpr size_t kMaxFreshReserve = 512;
  size_t fresh_reserve_ HORA_GUARDED_BY(mu_) = 0;
  bool shutdown_requested_ HORA_GUARDED_BY(mu_) = false;
  bool woken_ HORA_GUARDED_BY(mu_) = false;
  uint64_t takes_ HORA_GUARDED_BY(mu_) = 0;       // take_new() calls
  bool burst_over_ HORA_GUARDED_BY(mu_) = false;  // a thread waits on untaken requests
  bool closed_ HORA_GUARDED_BY(mu_) = false;
  Status closed_why_ HORA_GUARDED_BY(mu_);
};

}  // namespace engine
}  // namespace hora
