// FakeDeviceRuntime: a DeviceRuntime (core/base/device_runtime.h) whose "device memory" is host
// memory and whose streams run every call at once, so the engine's device path -- routing, the
// ready-event waits, packing, staging, unpacking -- runs for real in tests on a machine without
// a GPU. It logs every stream operation ("wait_event", "pack", "copy", ...) and knows which
// pointers it handed out as device memory, so tests check what the engine did and where.
//
// Timing (FakeLatencies, all 0 by default): each call spins the calling thread for what the
// CUDA runtime's host side costs (a launch, an event record, query or wait, a copy's enqueue),
// so benchmarks time the engine's host-side critical path as on a GPU.
// Asynchrony: the work itself runs at once, but pause_device() holds every event recorded
// from then on incomplete (query_event says false, wait_event blocks until its deadline) until
// resume_device(), so tests see work in flight. fail_copy_to(ptr, status) makes the next
// batched copy writing `ptr` fail "on the device": as on a GPU, the error is not returned by
// the launch but by the next event recorded on that stream (its query or wait).
// Thread-safe (one mutex).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "core/base/device_runtime.h"
#include "hora/mutex.h"
#include "hora/thread_annotations.h"

namespace hora {
namespace test_support {

// Host-side cost of each call, in nanoseconds (spun, not slept: microseconds matter).
struct FakeLatencies {
  int64_t launch_ns = 0;        // a kernel launch: batched copy, memset, cast
  int64_t event_record_ns = 0;  // record_event, stream_wait_event
  int64_t event_query_ns = 0;   // query_event
  int64_t event_sync_ns = 0;    // wait_event (beyond waiting for the event)
  int64_t copy_ns = 0;          // memcpy_async's enqueue
  // Device side: how long each kernel or copy runs on its stream, in order after the work
  // before it there. An event completes once its stream's work before it ran.
  int64_t kernel_ns = 0;
};

class FakeDeviceRuntime final : public DeviceRuntime {
 public:
  explicit FakeDeviceRuntime(int devices = 1) : devices_(devices) {}
  ~FakeDeviceRuntime() override;

  const char* name() const override { return "fake"; }
  int device_count() override { return devices_; }
  StatusOr<DeviceStream> create_stream(int device) override;
  void destroy_stream(int device, DeviceStream stream) override;
  StatusOr<DeviceEvent> create_event(int device) override;
  void destroy_event(int device, DeviceEvent event) override;
  Status record_event(int device, DeviceEvent event, DeviceStream stream) override;
  Status stream_wait_event(int device, DeviceStream stream, DeviceEvent event) override;
  Status wait_event(int device, DeviceEvent event, Deadline deadline,
                    const std::string& what) override;
  StatusOr<bool> query_event(int device, DeviceEvent event, const std::string& what) override;
  StatusOr<void*> alloc_device(int device, size_t bytes) override;
  void free_device(int device, void* ptr) override;
  StatusOr<void*> alloc_pinned(size_t bytes) override;
  void free_pinned(void* ptr) override;
  Status memcpy_async(int device, void* dst, const void* src, size_t bytes,
                      DeviceStream stream) override;
  Status batched_scale_copy_async(int device, const std::vector<DeviceCopyItem>& items,
                                  DataType dtype, double factor, DeviceStream stream) override;
  Status memset_zero_async(int device, void* buf, size_t bytes, DeviceStream stream) override;
  Status cast_async(int device, void* dst, DataType dst_dtype, const void* src, DataType src_dtype,
                    size_t count, DeviceStream stream) override;

  void set_latencies(const FakeLatencies& latencies);
  // Off: calls are not logged (log(), count() and stream_waits() then see nothing new), so a
  // benchmark's
  // millions of calls neither grow the log nor allocate under its mutex. On by default.
  void set_logging(bool on) { logging_.store(on, std::memory_order_relaxed); }
  // Events recorded from now on stay incomplete until resume_device().
  void pause_device();
  void resume_device();
  // `ns` of device time on `stream` (a collective that another fake enqueued there).
  void run_on_stream(DeviceStream stream, int64_t ns);
  // The next batched copy with an item writing `dst` fails on the device with `status`.
  void fail_copy_to(const void* dst, Status status);

  // Device memory for a test's tensor (freed with the runtime).
  void* tensor_memory(size_t bytes);
  // True when `p` lies in memory this runtime handed out as device memory.
  bool is_device_memory(const void* p) const;
  bool is_pinned_memory(const void* p) const;
  std::vector<std::string> log() const;
  int64_t count(const std::string& op) const;
  int64_t live_events() const;
  // Every stream_wait_event call, in order: which stream waited on which event.
  struct StreamWait {
    DeviceStream stream;
    DeviceEvent event;
  };
  std::vector<StreamWait> stream_waits() const;
  // The stream `event` was last recorded on (nullptr: never recorded).
  DeviceStream recorded_on(DeviceEvent event) const;

 private:
  struct Block {
    uint8_t* data;
    size_t bytes;
    bool pinned;
  };
  struct EventState {
    DeviceStream stream = nullptr;
    bool held = false;                                // recorded while the device was paused
    Status error;                                     // the work before it failed
    std::chrono::steady_clock::time_point done_at{};  // when the work before it has run
  };
  void note(const std::string& op);
  // Device time: `ns` more on `stream` (kernel_ns_ when negative).
  void queue_work(DeviceStream stream, int64_t ns = -1);
  void spin(const std::atomic<int64_t>& ns) const;
  // The event's state: complete (true), held (false) or its error.
  StatusOr<bool> event_done(DeviceEvent event, const std::string& what) const;
  bool in_block_locked(const void* p, bool pinned) const HORA_REQUIRES(mu_);
  Status check_device(int device, const char* what) const;

  const int devices_;
  mutable Mutex mu_;
  std::vector<Block> blocks_ HORA_GUARDED_BY(mu_);
  std::vector<std::string> log_ HORA_GUARDED_BY(mu_);
  int64_t live_events_ HORA_GUARDED_BY(mu_) = 0;
  std::vector<StreamWait> stream_waits_ HORA_GUARDED_BY(mu_);
  std::map<DeviceEvent, EventState> events_ HORA_GUARDED_BY(mu_);
  // FakeLatencies' fields, read by every call without the mutex.
  std::atomic<int64_t> launch_ns_{0}, event_record_ns_{0}, event_query_ns_{0}, event_sync_ns_{0},
      copy_ns_{0};
  std::atomic<bool> logging_{true};
  std::atomic<int64_t> kernel_ns_{0};
  // When each stream's queued work will have run (device time).
  std::map<DeviceStream, std::chrono::steady_clock::time_point> stream_done_ HORA_GUARDED_BY(mu_);
  bool paused_ HORA_GUARDED_BY(mu_) = false;
  std::map<const void*, Status> fail_copy_to_ HORA_GUARDED_BY(mu_);
  std::map<DeviceStream, Status> stream_errors_ HORA_GUARDED_BY(mu_);  // until the next record
  int64_t next_handle_ HORA_GUARDED_BY(mu_) = 1;
};

}  // namespace test_support
}  // namespace hora
