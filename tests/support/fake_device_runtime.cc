#include "tests/support/fake_device_runtime.h"

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <thread>
#include <utility>

#include "kernels/kernels.h"

namespace hora {
namespace test_support {

FakeDeviceRuntime::~FakeDeviceRuntime() {
  MutexLock lock(&mu_);
  for (Block& b : blocks_) std::free(b.data);
}

Status FakeDeviceRuntime::check_device(int device, const char* what) const {
  if (device < 0 || device >= devices_)
    return Status::invalid_argument(std::string(what) + ": no fake device " +
                                    std::to_string(device));
  return Status::OK();
}

// The alignment the CUDA kernels demand (kernels/cuda/device.cc's check_aligned), so that what
// the engine hands the fake fails here as it would on a GPU: `p` holds `dtype` elements.
static Status check_aligned(const char* what, DataType dtype, const void* p) {
  if (reinterpret_cast<uintptr_t>(p) % data_type_bytes(dtype) != 0)
    return Status::invalid_argument(std::string(what) + ": a " + data_type_name(dtype) +
                                    " buffer is not aligned to its element size");
  return Status::OK();
}

void FakeDeviceRuntime::spin(const std::atomic<int64_t>& latency) const {
  const int64_t ns = latency.load(std::memory_order_relaxed);
  if (ns <= 0) return;
  const auto until = std::chrono::steady_clock::now() + std::chrono::nanoseconds(ns);
  while (std::chrono::steady_clock::now() < until) {
  }
}

void FakeDeviceRuntime::set_latencies(const FakeLatencies& latencies) {
  launch_ns_ = latencies.launch_ns;
  event_record_ns_ = latencies.event_record_ns;
  event_query_ns_ = latencies.event_query_ns;
  event_sync_ns_ = latencies.event_sync_ns;
  copy_ns_ = latencies.copy_ns;
  kernel_ns_ = latencies.kernel_ns;
}

void FakeDeviceRuntime::queue_work(DeviceStream stream, int64_t ns) {
  if (ns < 0) ns = kernel_ns_.load(std::memory_order_relaxed);
  if (ns <= 0) return;
  const auto now = std::chrono::steady_clock::now();
  MutexLock lock(&mu_);
  auto& done = stream_done_[stream];
  done = std::max(done, now) + std::chrono::nanoseconds(ns);
}

void FakeDeviceRuntime::run_on_stream(DeviceStream stream, int64_t ns) { queue_work(stream, ns); }

void FakeDeviceRuntime::pause_device() {
  MutexLock lock(&mu_);
  paused_ = true;
}

void FakeDeviceRuntime::resume_device() {
  MutexLock lock(&mu_);
  paused_ = false;
  for (auto& [event, state] : events_) state.held = false;
}

void FakeDeviceRuntime::fail_copy_to(const void* dst, Status status) {
  MutexLock lock(&mu_);
  fail_copy_to_[dst] = std::move(status);
}

void FakeDeviceRuntime::note(const std::string& op) {
  if (!logging_.load(std::memory_order_relaxed)) return;
  MutexLock lock(&mu_);
  log_.push_back(op);
}

StatusOr<DeviceStream> FakeDeviceRuntime::create_stream(int device) {
  HORA_RETURN_IF_ERROR(check_device(device, "create_stream"));
  note("create_stream");
  MutexLock lock(&mu_);
  return reinterpret_cast<DeviceStream>(next_handle_++ << 4);
}

void FakeDeviceRuntime::destroy_stream(int, DeviceStream) { note("destroy_stream"); }

StatusOr<DeviceEvent> FakeDeviceRuntime::create_event(int device) {
  HORA_RETURN_IF_ERROR(check_device(device, "create_event"));
  note("create_event");
  MutexLock lock(&mu_);
  ++live_events_;
  return reinterpret_cast<DeviceEvent>(next_handle_++ << 4);
}

void FakeDeviceRuntime::destroy_event(int, DeviceEvent) {
  MutexLock lock(&mu_);
  --live_events_;
}

Status FakeDeviceRuntime::record_event(int device, DeviceEvent event, DeviceStream stream) {
  HORA_RETURN_IF_ERROR(check_device(device, "record_event"));
  spin(event_record_ns_);
  note("record_event");
  MutexLock lock(&mu_);
  EventState& st = events_[event];
  st.stream = stream;
  st.held = paused_;
  auto queued = stream_done_.find(stream);
  st.done_at =
      queued == stream_done_.end() ? std::chrono::steady_clock::time_point{} : queued->second;
  auto err = stream_errors_.find(stream);
  st.error = err == stream_errors_.end() ? Status::OK() : err->second;
  if (err != stream_errors_.end()) stream_errors_.erase(err);
  return Status::OK();
}

Status FakeDeviceRuntime::stream_wait_event(int device, DeviceStream stream, DeviceEvent event) {
  HORA_RETURN_IF_ERROR(check_device(device, "stream_wait_event"));
  spin(event_record_ns_);
  {
    MutexLock lock(&mu_);
    auto it = events_.find(event);  // the stream's later work runs after the event's
    if (it != events_.end() && it->second.done_at > std::chrono::steady_clock::time_point{}) {
      auto& done = stream_done_[stream];
      done = std::max(done, it->second.done_at);
    }
  }
  if (!logging_.load(std::memory_order_relaxed)) return Status::OK();
  note("stream_wait_event");
  MutexLock lock(&mu_);
  stream_waits_.push_back({stream, event});
  return Status::OK();
}

std::vector<FakeDeviceRuntime::StreamWait> FakeDeviceRuntime::stream_waits() const {
  MutexLock lock(&mu_);
  return stream_waits_;
}

DeviceStream FakeDeviceRuntime::recorded_on(DeviceEvent event) const {
  MutexLock lock(&mu_);
  auto it = events_.find(event);
  return it == events_.end() ? nullptr : it->second.stream;
}

StatusOr<bool> FakeDeviceRuntime::event_done(DeviceEvent event, const std::string& what) const {
  MutexLock lock(&mu_);
  auto it = events_.find(event);
  if (it == events_.end()) return true;  // never recorded: complete, as cudaEventQuery says
  if (it->second.held || std::chrono::steady_clock::now() < it->second.done_at) return false;
  if (!it->second.error.ok())
    return Status(it->second.error.code(), what + " on fake:0: " + it->second.error.message());
  return true;
}

Status FakeDeviceRuntime::wait_event(int device, DeviceEvent event, Deadline deadline,
                                     const std::string& what) {
  HORA_RETURN_IF_ERROR(check_device(device, "wait_event"));
  spin(event_sync_ns_);
  note("host_wait");
  for (;;) {
    HORA_ASSIGN_OR_RETURN(bool done, event_done(event, what));
    if (done) return Status::OK();
    if (deadline.expired())
      return Status::timeout(what + " on fake:0: the work did not complete before the deadline");
    bool held = false;
    {
      MutexLock lock(&mu_);
      auto it = events_.find(event);
      held = it != events_.end() && it->second.held;
    }
    // Polled as the CUDA runtime's wait is: yields while the device time runs out; a paused
    // device is waited for in sleeps.
    if (held)
      std::this_thread::sleep_for(std::chrono::microseconds(50));
    else
      std::this_thread::yield();
  }
}

StatusOr<bool> FakeDeviceRuntime::query_event(int device, DeviceEvent event,
                                              const std::string& what) {
  HORA_RETURN_IF_ERROR(check_device(device, "query_event"));
  spin(event_query_ns_);
  return event_done(event, what);
}

StatusOr<void*> FakeDeviceRuntime::alloc_device(int device, size_t bytes) {
  HORA_RETURN_IF_ERROR(check_device(device, "alloc_device"));
  if (bytes == 0) return static_cast<void*>(nullptr);
  note("alloc_device");
  return tensor_memory(bytes);
}

void FakeDeviceRuntime::free_device(int, void*) {}  // freed with the runtime

StatusOr<void*> FakeDeviceRuntime::alloc_pinned(size_t bytes) {
  if (bytes == 0) return static_cast<void*>(nullptr);
  note("alloc_pinned");
  auto* data = static_cast<uint8_t*>(std::calloc(bytes, 1));
  MutexLock lock(&mu_);
  blocks_.push_back({data, bytes, true});
  return static_cast<void*>(data);
}

void FakeDeviceRuntime::free_pinned(void*) {}

void* FakeDeviceRuntime::tensor_memory(size_t bytes) {
  auto* data = static_cast<uint8_t*>(std::calloc(bytes == 0 ? 1 : bytes, 1));
  MutexLock lock(&mu_);
  blocks_.push_back({data, bytes == 0 ? 1 : bytes, false});
  return data;
}

bool FakeDeviceRuntime::in_block_locked(const void* p, bool pinned) const {
  const auto* q = static_cast<const uint8_t*>(p);
  for (const Block& b : blocks_)
    if (b.pinned == pinned && q >= b.data && q < b.data + b.bytes) return true;
  return false;
}

bool FakeDeviceRuntime::is_device_memory(const void* p) const {
  MutexLock lock(&mu_);
  return in_block_locked(p, false);
}

bool FakeDeviceRuntime::is_pinned_memory(const void* p) const {
  MutexLock lock(&mu_);
  return in_block_locked(p, true);
}

Status FakeDeviceRuntime::memcpy_async(int device, void* dst, const void* src, size_t bytes,
                                       DeviceStream stream) {
  HORA_RETURN_IF_ERROR(check_device(device, "memcpy_async"));
  spin(copy_ns_);
  queue_work(stream);
  {
    MutexLock lock(&mu_);
    const bool to_host = in_block_locked(dst, true), from_host = in_block_locked(src, true);
    if (logging_.load(std::memory_order_relaxed))
      log_.push_back(to_host ? "copy_to_host" : from_host ? "copy_to_device" : "copy_on_device");
  }
  if (bytes > 0) std::memmove(dst, src, bytes);
  return Status::OK();
}

Status FakeDeviceRuntime::batched_scale_copy_async(int device,
                                                   const std::vector<DeviceCopyItem>& items,
                                                   DataType dtype, double factor,
                                                   DeviceStream stream) {
  HORA_RETURN_IF_ERROR(check_device(device, "batched_scale_copy_async"));
  if (items.empty()) return Status::OK();
  spin(launch_ns_);
  queue_work(stream);
  if (logging_.load(std::memory_order_relaxed))
    note("batched_copy x" + std::to_string(items.size()));
  {
    MutexLock lock(&mu_);
    for (const DeviceCopyItem& it : items) {
      auto f = fail_copy_to_.find(it.dst);
      if (f == fail_copy_to_.end()) continue;
      stream_errors_[stream] = std::move(f->second);  // the kernel "faulted": nothing written
      fail_copy_to_.erase(f);
      return Status::OK();
    }
  }
  for (const DeviceCopyItem& it : items) {
    if (!is_device_memory(it.dst) || !is_device_memory(it.src))
      return Status::invalid_argument("batched_scale_copy_async: an item is not device memory");
    if (factor != 1.0) {  // the GPU's scaled copy reads and writes whole elements
      HORA_RETURN_IF_ERROR(check_aligned("batched_scale_copy_async", dtype, it.dst));
      HORA_RETURN_IF_ERROR(check_aligned("batched_scale_copy_async", dtype, it.src));
    }
    kernels::scale_copy(it.dst, it.src, it.count, dtype, factor);
  }
  return Status::OK();
}

Status FakeDeviceRuntime::memset_zero_async(int device, void* buf, size_t bytes,
                                            DeviceStream stream) {
  HORA_RETURN_IF_ERROR(check_device(device, "memset_zero_async"));
  spin(launch_ns_);
  queue_work(stream);
  note("memset_zero");
  if (bytes > 0) std::memset(buf, 0, bytes);
  return Status::OK();
}

Status FakeDeviceRuntime::cast_async(int device, void* dst, DataType dst_dtype, const void* src,
                                     DataType src_dtype, size_t count, DeviceStream stream) {
  HORA_RETURN_IF_ERROR(check_device(device, "cast_async"));
  spin(launch_ns_);
  queue_work(stream);
  if (count > 0 && (!is_device_memory(dst) || !is_device_memory(src)))
    return Status::invalid_argument("cast_async: a buffer is not device memory");
  HORA_RETURN_IF_ERROR(check_aligned("cast_async", dst_dtype, dst));
  HORA_RETURN_IF_ERROR(check_aligned("cast_async", src_dtype, src));
  note(std::string("cast ") + data_type_name(src_dtype) + "->" + data_type_name(dst_dtype));
  auto* half = static_cast<uint16_t*>(dst);
  const auto* half_in = static_cast<const uint16_t*>(src);
  if (src_dtype == DataType::kFloat32 && dst_dtype == DataType::kFloat16)
    kernels::cast_f32_to_f16(half, static_cast<const float*>(src), count);
  else if (src_dtype == DataType::kFloat32 && dst_dtype == DataType::kBFloat16)
    kernels::cast_f32_to_bf16(half, static_cast<const float*>(src), count);
  else if (src_dtype == DataType::kFloat16 && dst_dtype == DataType::kFloat32)
    kernels::cast_f16_to_f32(static_cast<float*>(dst), half_in, count);
  else if (src_dtype == DataType::kBFloat16 && dst_dtype == DataType::kFloat32)
    kernels::cast_bf16_to_f32(static_cast<float*>(dst), half_in, count);
  else
    return Status::invalid_argument(std::string("cast_async: no cast from ") +
                                    data_type_name(src_dtype) + " to " + data_type_name(dst_dtype));
  return Status::OK();
}

std::vector<std::string> FakeDeviceRuntime::log() const {
  MutexLock lock(&mu_);
  return log_;
}

int64_t FakeDeviceRuntime::count(const std::string& op) const {
  MutexLock lock(&mu_);
  int64_t n = 0;
  for (const std::string& s : log_)
    if (s.compare(0, op.size(), op) == 0) ++n;
  return n;
}

int64_t FakeDeviceRuntime::live_events() const {
  MutexLock lock(&mu_);
  return live_events_;
}

}  // namespace test_support
}  // namespace hora
