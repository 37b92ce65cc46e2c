#include "core/engine/ready_events.h"

#include <cstdint>
#include <utility>

namespace hora {
namespace engine {
namespace {

// cudaStreamPerThread's handle: another stream on each thread that uses it.
bool is_per_thread_stream(DeviceStream stream) {
  return reinterpret_cast<uintptr_t>(stream) == 0x2;
}

}  // namespace

ReadyEvents::ReadyEvents(DeviceRuntime* runtime)
    : runtime_(runtime), pool_(std::make_shared<Pool>(runtime)) {}

ReadyEvents::~ReadyEvents() {
  std::map<int, std::vector<DeviceEvent>> pooled;
  {
    MutexLock lock(&pool_->mu);
    pool_->alive = false;
    pooled.swap(pool_->free);
  }
  for (auto& [device, events] : pooled)
    for (DeviceEvent e : events) runtime_->destroy_event(device, e);
}

StatusOr<std::shared_ptr<void>> ReadyEvents::acquire(int device) {
  DeviceEvent event = nullptr;
  {
    MutexLock lock(&pool_->mu);
    std::vector<DeviceEvent>& free = pool_->free[device];
    if (!free.empty()) {
      event = free.back();
      free.pop_back();
    }
  }
  if (event == nullptr) {
    HORA_ASSIGN_OR_RETURN(event, runtime_->create_event(device));
  }
  return std::shared_ptr<void>(event, [pool = pool_, device](void* e) {
    {
      MutexLock lock(&pool->mu);
      std::vector<DeviceEvent>& free = pool->free[device];
      if (pool->alive && free.size() < kMaxPooled) {
        free.push_back(e);
        return;
      }
    }
    pool->runtime->destroy_event(device, e);
  });
}

StatusOr<ReadyEvents::Ready> ReadyEvents::record(int device, DeviceStream stream) {
  HORA_ASSIGN_OR_RETURN(std::shared_ptr<void> event, acquire(device));
  Ready ready;
  {
    MutexLock lock(&record_mu_);
    HORA_RETURN_IF_ERROR(runtime_->record_event(device, event.get(), stream));
    ready.seq = ++next_seq_;
  }
  ready.event = std::move(event);
  ready.stream = stream;
  return ready;
}

StatusOr<int> ReadyEvents::wait(int device, DeviceStream engine_stream,
                                const std::vector<Ready>& events) {
  // The last record per framework stream (few streams: a linear search beats a map).
  std::vector<const Ready*> last;
  for (const Ready& r : events) {
    bool merged = false;
    if (!is_per_thread_stream(r.stream)) {
      for (const Ready*& l : last) {
        if (l->stream == r.stream) {
          if (r.seq > l->seq) l = &r;
          merged = true;
          break;
        }
      }
    }
    if (!merged) last.push_back(&r);
  }
  for (const Ready* r : last)
    HORA_RETURN_IF_ERROR(runtime_->stream_wait_event(device, engine_stream, r->event.get()));
  return static_cast<int>(last.size());
}

}  // namespace engine
}  // namespace hora
