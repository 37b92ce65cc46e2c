#include "core/engine/allreduce_plan.h"

#include <string>

namespace hora {
namespace engine {

void record_bucket_events(Timeline& timeline, const std::vector<Response>& responses,
                          const Bucket& bucket, const char* phase, Clock::time_point start,
                          const Timeline::Args& args) {
  const auto end = Clock::now();
  for (int i : bucket.members) timeline.event(responses[i].name, phase, start, end, args);
}

Timeline::Args allreduce_args(const char* key, const char* value, const char* backend, size_t bytes,
                              size_t tensors) {
  return {{key, value},
          {"backend", backend},
          {"bytes", std::to_string(bytes)},
          {"tensors", std::to_string(tensors)}};
}

}  // namespace engine
}  // namespace hora
