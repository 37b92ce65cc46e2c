// The gradient reducers that native op libraries drive through the C API (c_api.h): a
// registry from id to reducer, and one waiter thread that runs their synchronize() so that no
// framework thread blocks on a step's allreduces.
//
// Why a thread: GradientReducer::synchronize blocks until every handle of the step
// completed (hora/gradient_reducer.h), while a framework's asynchronous op must return at
// once and complete through a callback. One waiter thread per process takes the
// synchronizations in order; each ends with its callback on that thread.
//
// Ownership: the registry holds a shared_ptr per id (shared: a synchronization in progress
// keeps its reducer alive after the id was released); whoever drops the last reference runs
// the reducer's destructor, which waits for collectives still in flight.
// Threads: every method is safe from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "hora/gradient_reducer.h"
#include "hora/mutex.h"

namespace hora {
namespace python {

class CApiReducers {
 public:
  CApiReducers() = default;
  // Stops the waiter thread after the synchronizations already queued.
  ~CApiReducers();
  CApiReducers(const CApiReducers&) = delete;
  CApiReducers& operator=(const CApiReducers&) = delete;

  // GradientReducer::create's errors; else a new id (> 0, never reused in this process).
  StatusOr<int64_t> create(std::vector<std::string> names, GradientReducerOptions options);
  // kFailedPrecondition naming the id when it is unknown or was released.
  StatusOr<std::shared_ptr<GradientReducer>> find(int64_t id) const;
  // Forgets `id` (no-op when unknown). May block while the reducer's collectives finish,
  // when this held its last reference.
  void release(int64_t id);

  // Queues reducer->synchronize() on the waiter thread; `callback` runs there with its
  // Status. Returns at once.
  void synchronize_later(std::shared_ptr<GradientReducer> reducer,
                         std::function<void(Status)> callback);

 private:
  struct Job {
    std::shared_ptr<GradientReducer> reducer;
    std::function<void(Status)> callback;
  };
  void run_waiter() HORA_EXCLUDES(mu_);

  // Guards the members marked so. Never held while a reducer synchronizes or a callback runs.
  mutable Mutex mu_;
  CondVar cv_;  // a job was queued or stopping_ was set
  std::map<int64_t, std::shared_ptr<GradientReducer>> reducers_ HORA_GUARDED_BY(mu_);
  int64_t next_id_ HORA_GUARDED_BY(mu_) = 1;
  std::deque<Job> jobs_ HORA_GUARDED_BY(mu_);
  bool stopping_ HORA_GUARDED_BY(mu_) = false;
  std::thread waiter_ HORA_GUARDED_BY(mu_);  // started with the first synchronize_later
};

// The process's one registry (the C API's functions are plain C, so they reach it through
// this accessor; it lives until static destruction).
CApiReducers& c_api_reducers();

}  // namespace python
}  // namespace hora
