// FakeDeviceRuntime: a DeviceRuntime (core/base/device_runtime.h) whose "device memory" is host
// memory and whose streams run every call at once, so the engine's device path -- routing, the
// ready-event waits, packing, staging, unpacking -- runs for real in tests on a machine without
// a GPU. It logs every stream operation ("wait_event", "pack", "copy", ...) and knows which
// pointers it handed out as device memory, so tests check what the engine did and where.
// Thread-safe (one mutex).
#pragma once

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
  void note(const std::string& op);
  bool in_block_locked(const void* p, bool pinned) const HORA_REQUIRES(mu_);
  Status check_device(int device, const char* what) const;

  const int devices_;
  mutable Mutex mu_;
  std::vector<Block> blocks_ HORA_GUARDED_BY(mu_);
  std::vector<std::string> log_ HORA_GUARDED_BY(mu_);
  int64_t live_events_ HORA_GUARDED_BY(mu_) = 0;
  std::vector<StreamWait> stream_waits_ HORA_GUARDED_BY(mu_);
  std::map<DeviceEvent, DeviceStream> recorded_on_ HORA_GUARDED_BY(mu_);
  int64_t next_handle_ HORA_GUARDED_BY(mu_) = 1;
};

}  // namespace test_support
}  // namespace hora
