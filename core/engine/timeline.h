// Timeline: a Chrome trace (chrome://tracing, Perfetto) of what the engine did with each
// tensor, written by rank 0 when HORA_TIMELINE names a file (horarun --timeline sets it).
//
// One trace "thread" (row) per tensor name. Per collective, the phases Horovod's timeline
// shows: NEGOTIATE (from enqueue on rank 0 until every rank agreed; args: dtype, shape, op,
// with an instant mark "rank R ready" as the coordinator receives each rank's request, for
// tensors negotiated through it; cached tensors agree in one reduction that carries no times),
// QUEUE (agreed, waiting for the buckets before it), MEMCPY_IN_FUSION_BUFFER, the collective
// itself (ALLREDUCE, BROADCAST, ...; args: algorithm, backend, bytes, tensors in the bucket),
// MEMCPY_OUT_FUSION_BUFFER. A lone tensor has no copies (the algorithm reads its input and
// writes its output), or, with scale factors, PREPARE_OUTPUT (copy in -> out with the
// prescale) and POSTSCALE.
//
// Off the hot path: event() and mark() only append a record under a mutex; a writer thread
// formats and writes them every 100 ms (or sooner when many are waiting). The file is a JSON
// array, one event per line, that is valid after every write: each write replaces the closing
// "]" with the new events followed by a new "]", in one pwrite. A pwrite of many pages is not
// atomic under SIGKILL (the kernel stops between pages), so a rank killed during one can leave
// the array cut inside an event; horarun, which outlives its ranks, then cuts the file after
// its last complete event and closes the array (launcher/timeline_repair.h), so the events
// written before the kill load. Under another launcher such a file needs that cut by hand.
//
// Switchable at run time (hora::start_timeline / stop_timeline): open() and close() may run
// on any thread while the engine records; enabled() is an atomic flag, so a record racing a
// close is dropped (or written by the next open's writer: open() discards such leftovers).
//
// event()/mark()/mark_cycle(): any thread (the engine's). open()/close(): any thread,
// serialised by control_mu_.
#pragma once

#include <sys/types.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <string>
#include <thread>
#include <unordered_map>
#include <utility>
#include <vector>

#include "hora/mutex.h"
#include "hora/status.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace engine {

class Timeline {
 public:
  using TimePoint = std::chrono::steady_clock::time_point;
  using Args = std::vector<std::pair<std::string, std::string>>;

  Timeline() = default;
  Timeline(const Timeline&) = delete;
  Timeline& operator=(const Timeline&) = delete;
  ~Timeline() { close(); }

  // Closes a timeline being written, then creates `path` (an empty array) and starts the
  // writer; an empty path leaves the timeline disabled. `mark_cycles`: mark_cycle() writes
  // (Horovod's CYCLE_START marks). Fails (naming the path and errno) when the file cannot be
  // created.
  Status open(const std::string& path, bool mark_cycles = false);
  bool enabled() const { return enabled_.load(std::memory_order_acquire); }
  bool marks_cycles() const { return mark_cycles_.load(std::memory_order_relaxed); }

  // A phase of `tensor` from `start` to `end` ("ph":"X"), with `args` shown by the viewer.
  void event(const std::string& tensor, const char* phase, TimePoint start, TimePoint end,
             Args args = {});
  // An instant mark on `tensor`'s row ("ph":"i"), such as a rank becoming ready.
  void mark(const std::string& tensor, std::string label, TimePoint at);
  // A global instant mark "CYCLE_START" (one engine round begins), when open() asked for them.
  void mark_cycle(TimePoint at);

  // Writes what is left, stops the writer and closes the file. Idempotent.
  void close();

 private:
  struct Record {
    std::string tensor;
    std::string phase;
    TimePoint start, end;
    bool instant = false;
    bool global = false;  // an instant mark across every row (no tensor)
    Args args;
  };

  void close_locked() HORA_REQUIRES(control_mu_);
  void push(Record r);
  void writer_loop();
  // Writer thread: formats `batch` and appends it before the closing bracket.
  void write_batch(const std::vector<Record>& batch);
  int row_of(const std::string& tensor, std::string* text);

  Mutex control_mu_;  // serialises open() and close(); taken before mu_
  std::atomic<bool> enabled_{false};
  std::atomic<bool> mark_cycles_{false};
  int fd_ = -1;  // open()/close() and the writer thread, which they start and join
  std::string path_;
  TimePoint origin_;
  off_t end_ = 0;        // where the closing "\n]\n" starts
  bool empty_ = true;    // no event written yet
  bool failed_ = false;  // a write failed: later batches are dropped (writer thread)
  std::unordered_map<std::string, int> rows_;  // writer thread only

  Mutex mu_;    // guards pending_ and stop_; never held while writing the file
  CondVar cv_;  // pending_ grew to a batch, or stop_
  std::vector<Record> pending_ HORA_GUARDED_BY(mu_);
  bool stop_ HORA_GUARDED_BY(mu_) = false;
  std::thread writer_;
};

}  // namespace engine
}  // namespace hora
