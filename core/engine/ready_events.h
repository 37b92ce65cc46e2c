// ReadyEvents: where each device input is ready on its framework's stream, from the enqueuing
// threads (DeviceExecutor::admit) to the engine's stream (the background thread).
//
// record(device, stream) records an event on the framework's stream at enqueue; the Ready it
// returns travels in the tensor's queue Entry (no table by name, no lookup on either side);
// wait(device, engine_stream, events) makes the engine's stream wait for all of them on the
// GPU, neither the host nor the rest of the device waiting (Horovod's ready event).
//
// What a tensor costs: a bucket of 200 gradients from one backward pass was 200 event creations,
// records, stream waits and destructions, each a CUDA runtime call of a few microseconds. Now:
// - the events come from a per-device pool and go back to it (no create or destroy per tensor);
// - the tensors of one enqueue call on one stream share one record (admit);
// - wait() waits only for the last event recorded on each framework stream: the records on one
//   stream complete in order, so that one covers the earlier ones, and a bucket whose tensors
//   came from one stream is one cudaStreamWaitEvent. The order is the record order: a mutex
//   spans each record and the number it gets. The per-thread default stream's handle
//   (cudaStreamPerThread, 0x2) names another stream on each thread, so its events are each
//   waited for.
//
// Threads: record from any thread; wait from the engine's thread. Events are plain
// DeviceEvent handles of the DeviceRuntime, which must outlive this object.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "core/base/device_runtime.h"
#include "hora/mutex.h"
#include "hora/status.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace engine {

class ReadyEvents {
 public:
  struct Ready {
    std::shared_ptr<void> event;  // back to the pool when its last holder drops it
    DeviceStream stream = nullptr;
    uint64_t seq = 0;  // the record's place among all records
  };

  explicit ReadyEvents(DeviceRuntime* runtime);
  // Destroys the pooled events; one still held elsewhere (an Entry) is destroyed when dropped.
  ~ReadyEvents();
  ReadyEvents(const ReadyEvents&) = delete;
  ReadyEvents& operator=(const ReadyEvents&) = delete;

  // A ready event recorded on `stream` of `device` now.
  StatusOr<Ready> record(int device, DeviceStream stream);
  // `engine_stream` on `device` waits for every event of `events` (the last per framework
  // stream); returns how many stream waits that took.
  StatusOr<int> wait(int device, DeviceStream engine_stream, const std::vector<Ready>& events);
  // An event of `device` from the pool (created when the pool has none); back to the pool when
  // its last holder drops it. The engine's completion events come from here too.
  StatusOr<std::shared_ptr<void>> acquire(int device);

 private:
  struct Pool {
    explicit Pool(DeviceRuntime* rt) : runtime(rt) {}
    DeviceRuntime* const runtime;
    Mutex mu;
    bool alive HORA_GUARDED_BY(mu) = true;
    std::map<int, std::vector<DeviceEvent>> free HORA_GUARDED_BY(mu);  // by device
  };
  static constexpr size_t kMaxPooled = 4096;  // per device; more are destroyed when dropped

  DeviceRuntime* const runtime_;
  const std::shared_ptr<Pool> pool_;
  Mutex record_mu_;  // held across each record_event, so that the numbers follow the records
  uint64_t next_seq_ HORA_GUARDED_BY(record_mu_) = 0;
};

}  // namespace engine
}  // namespace hora
