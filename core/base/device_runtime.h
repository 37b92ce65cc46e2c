// DeviceRuntime: the one interface through which hora's engine reaches a GPU runtime for device
// tensors: streams, events, copies, device and pinned host memory, and the batched pack kernel.
// It names no CUDA type (streams and events are opaque pointers: cudaStream_t and cudaEvent_t
// for the CUDA implementation), so the engine builds and behaves as before where CUDA is absent.
//
// Implementations: the CUDA runtime (kernels/cuda/cuda_device_runtime.h, made through
// collectives::make_device_runtime where CUDA is built) and, in tests, a fake whose "device
// memory" is host memory (tests/support/fake_device_runtime.h), so the engine's device path
// runs for real on a machine without a GPU.
//
// Every *_async call enqueues on `stream` and returns without waiting; errors that happen while
// the work runs surface at the next query of an event recorded after it. Errors name the call
// and the device. Thread-safe: any thread may call any method (as the CUDA runtime allows);
// the engine uses one stream per device from its background thread.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "core/base/deadline.h"
#include "hora/data_type.h"
#include "hora/status.h"

namespace hora {

using DeviceStream = void*;  // cudaStream_t; nullptr: the device's default stream
using DeviceEvent = void*;   // cudaEvent_t

// One buffer of a batched copy: `count` elements from src to dst (device memory).
struct DeviceCopyItem {
  void* dst = nullptr;
  const void* src = nullptr;
  size_t count = 0;
};

class DeviceRuntime {
 public:
  virtual ~DeviceRuntime() = default;

  // "cuda" or the fake's name: for messages and the timeline.
  virtual const char* name() const = 0;
  // Devices this process can use; 0 when there is none (never fails).
  virtual int device_count() = 0;

  // A non-blocking stream on `device` (it does not synchronise with the default stream).
  virtual StatusOr<DeviceStream> create_stream(int device) = 0;
  virtual void destroy_stream(int device, DeviceStream stream) = 0;
  // An event without timing on `device`.
  virtual StatusOr<DeviceEvent> create_event(int device) = 0;
  virtual void destroy_event(int device, DeviceEvent event) = 0;
  // The event completes once `stream` reaches this point.
  virtual Status record_event(int device, DeviceEvent event, DeviceStream stream) = 0;
  // Work enqueued on `stream` after this call waits for `event` on the GPU (the host does not).
  virtual Status stream_wait_event(int device, DeviceStream stream, DeviceEvent event) = 0;
  // Host side: waits until `event` completed, polling until `deadline` (kTimeout naming `what`).
  // An error of the work before the event is returned here.
  virtual Status wait_event(int device, DeviceEvent event, Deadline deadline,
                            const std::string& what) = 0;
  // Host side, without waiting: true once `event` completed, false while the work before it
  // runs (cudaEventQuery); an error of that work is returned, naming `what`.
  virtual StatusOr<bool> query_event(int device, DeviceEvent event, const std::string& what) = 0;

  // Device memory of `bytes` on `device` (bytes may be 0: a null pointer).
  virtual StatusOr<void*> alloc_device(int device, size_t bytes) = 0;
  virtual void free_device(int device, void* ptr) = 0;
  // Page-locked host memory (copies to and from it run asynchronously).
  virtual StatusOr<void*> alloc_pinned(size_t bytes) = 0;
  virtual void free_pinned(void* ptr) = 0;

  // Copies `bytes` host <-> device or device <-> device (the runtime infers which) on `stream`.
  virtual Status memcpy_async(int device, void* dst, const void* src, size_t bytes,
                              DeviceStream stream) = 0;
  // For every item, dst[k] = src[k] * factor in `dtype` (factor 1 copies the bytes), as few
  // launches as possible (kernels/cuda batched_scale_copy): packing into the fusion buffer and
  // unpacking out of it. kInvalidArgument for a dtype/factor the kernels do not define.
  virtual Status batched_scale_copy_async(int device, const std::vector<DeviceCopyItem>& items,
                                          DataType dtype, double factor, DeviceStream stream) = 0;
  // buf[i] = 0 for `bytes` bytes (a joined rank's contribution).
  virtual Status memset_zero_async(int device, void* buf, size_t bytes, DeviceStream stream) = 0;
  // dst[i] = src[i] converted from `src_dtype` to `dst_dtype` for i < count: float32 to or
  // from float16/bfloat16 (kernels/cuda's casts: round-to-nearest-even, NaN stays NaN,
  // overflow goes to infinity), the compression of device tensors. kInvalidArgument naming
  // both dtypes for any other pair.
  virtual Status cast_async(int device, void* dst, DataType dst_dtype, const void* src,
                            DataType src_dtype, size_t count, DeviceStream stream) = 0;
};

}  // namespace hora
