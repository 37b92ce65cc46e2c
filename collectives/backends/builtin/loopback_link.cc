#include "collectives/backends/builtin/loopback_link.h"

#include <algorithm>
#include <cstring>

namespace hora {
namespace collectives {
namespace builtin {

StatusOr<size_t> LoopbackLink::write_some(const ConstSpan* spans, int count) {
  size_t total = 0;
  for (int i = 0; i < count; ++i) {
    if (spans[i].bytes == 0) continue;
    const auto* p = static_cast<const uint8_t*>(spans[i].data);
    chunks_.emplace_back(p, p + spans[i].bytes);
    total += spans[i].bytes;
  }
  return total;
}

StatusOr<size_t> LoopbackLink::read_some(void* data, size_t bytes) {
  size_t done = 0;
  auto* out = static_cast<uint8_t*>(data);
  while (done < bytes && !chunks_.empty()) {
    std::vector<uint8_t>& front = chunks_.front();
    size_t n = std::min(bytes - done, front.size() - front_offset_);
    std::memcpy(out + done, front.data() + front_offset_, n);
    done += n;
    front_offset_ += n;
    if (front_offset_ == front.size()) {
      chunks_.pop_front();
      front_offset_ = 0;
    }
  }
  return done;
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
