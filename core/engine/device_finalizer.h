// DeviceFinalizer: completes the handles of device work that the engine's thread only
// enqueued (Horovod's finalizer threads). The engine's thread queues a bucket's pack, collective
// and unpack on its stream, records an event behind them and hands the event here with the
// completion of the bucket's handles; it goes on with the next bucket while the GPU works. One
// thread polls the events in submission order (they are on one stream, so they complete in
// that order) and completes each job once its event did: a handle completes only when its
// output is written.
//
// Failures:
//   - an error of the work before a job's event (query_event) fails that job alone, naming it;
//   - the device communicator's async_error() (a peer lost under an in-flight NCCL collective,
//     abort()) fails the job being waited for and every later one, and is returned by every
//     later submit(), so the engine stops as for any communication failure;
//   - a job whose event has not completed within the timeout fails with kTimeout naming it.
// drain(deadline) waits until every job submitted so far finished; jobs still pending at the
// deadline fail with kTimeout (the GPU is stuck). The destructor drains with the timeout.
//
// Threads: submit, drain and the counters from any thread (the engine's); completions run on
// the finalizer's own thread.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <string>
#include <thread>

#include "core/base/deadline.h"
#include "core/base/device_runtime.h"
#include "hora/mutex.h"
#include "hora/status.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace engine {

class DeviceFinalizer {
 public:
  struct Job {
    int device = -1;
    std::shared_ptr<void> event;  // a DeviceEvent recorded after the job's last work
    std::string what;             // "allreduce of 'a' and 3 more", for messages
    // Completes the job's handles with the job's outcome; runs on the finalizer's thread.
    std::function<void(const Status&)> complete;
  };
  // The device communicator's async_error() (null: nothing to watch).
  using HealthFn = std::function<Status()>;

  DeviceFinalizer(DeviceRuntime* runtime, HealthFn health, double timeout_s);
  ~DeviceFinalizer();
  DeviceFinalizer(const DeviceFinalizer&) = delete;
  DeviceFinalizer& operator=(const DeviceFinalizer&) = delete;

  // Queues `job` (starting the thread on first use). After a fatal failure the job is
  // completed with that failure at once and the failure returned.
  Status submit(Job job);
  // Waits until every submitted job finished, at most until `deadline`; see the file comment.
  // Returns the fatal failure, if one happened, else OK (or kTimeout when jobs were failed).
  Status drain(Deadline deadline);

  int64_t in_flight() const;      // submitted, not finished
  int64_t max_in_flight() const;  // the most at once so far
  int64_t finished() const;

 private:
  void loop();
  // Polls `job`'s event until it completed, failed, the health check failed (*fatal set) or a
  // deadline passed.
  Status wait_for(const Job& job, Deadline deadline, bool* fatal);
  // Fails every queued job with `why` (the fatal failure or the drain's timeout).
  void fail_queued(const Status& why);

  DeviceRuntime* const runtime_;
  const HealthFn health_;
  const double timeout_s_;
  mutable Mutex mu_;
  CondVar cv_;  // a job queued, a job finished, stop
  std::deque<std::pair<Job, Deadline>> jobs_ HORA_GUARDED_BY(mu_);
  int64_t pending_ HORA_GUARDED_BY(mu_) = 0;  // queued or being waited for
  int64_t max_pending_ HORA_GUARDED_BY(mu_) = 0;
  int64_t finished_ HORA_GUARDED_BY(mu_) = 0;
  bool stop_ HORA_GUARDED_BY(mu_) = false;
  bool idle_ HORA_GUARDED_BY(mu_) = false;  // the thread sleeps on cv_ for a job: submit wakes it
  int64_t drainers_ HORA_GUARDED_BY(mu_) = 0;  // drain() calls waiting on cv_
  Status fatal_ HORA_GUARDED_BY(mu_);
  Status abandon_ HORA_GUARDED_BY(mu_);  // set by a drain past its deadline
  std::thread thread_;                   // started by the first submit (engine thread)
};

}  // namespace engine
}  // namespace hora
