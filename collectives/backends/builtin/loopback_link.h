// LoopbackLink: the ByteLink from a rank to itself; an unbounded in-memory byte queue, so a
// send to self never blocks and the matching recv finds the bytes.
#pragma once

#include <deque>
#include <vector>

#include "collectives/backends/builtin/byte_link.h"

namespace hora {
namespace collectives {
namespace builtin {

class LoopbackLink : public ByteLink {
 public:
  StatusOr<size_t> write_some(const ConstSpan* spans, int count) override;
  StatusOr<size_t> read_some(void* data, size_t bytes) override;
  const char* kind() const override { return "self"; }

 private:
  std::deque<std::vector<uint8_t>> chunks_;
  size_t front_offset_ = 0;
};

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
