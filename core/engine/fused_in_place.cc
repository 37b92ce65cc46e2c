#include "core/engine/fused_in_place.h"

#include <cstring>

#include "kernels/kernels.h"

namespace hora {
namespace engine {

void bucket_spans(const std::vector<Response>& responses, const Bucket& bucket,
                  const std::vector<Entry*>& entries, std::vector<collectives::ReduceSpan>* out) {
  std::vector<collectives::ReduceSpan>& spans = *out;
  spans.clear();
  spans.reserve(bucket.members.size());
  for (int i : bucket.members) {
    const Response& r = responses[i];
    collectives::ReduceSpan s;
    s.count = static_cast<size_t>(r.element_count());
    if (const Entry* e = entries[i]) {
      s.in = e->in.data();
      s.out = e->out.data();
    }
    spans.push_back(s);
  }
}

void local_allreduce_spans(const std::vector<collectives::ReduceSpan>& spans, DataType dtype,
                           double prescale, double postscale) {
  const size_t esize = data_type_bytes(dtype);
  for (const collectives::ReduceSpan& s : spans) {
    if (s.out == nullptr || s.count == 0) continue;
    if (s.in == nullptr) {
      std::memset(s.out, 0, s.count * esize);
      continue;
    }
    // Factors of 1 are skipped (no kernel call per tensor): in place, an average at one rank
    // costs nothing.
    if (s.in != s.out || prescale != 1.0)
      kernels::scale_copy(s.out, s.in, s.count, dtype, prescale);
    if (postscale != 1.0) kernels::scale(s.out, s.count, dtype, postscale);
  }
}

}  // namespace engine
}  // namespace hora
