#include "core/engine/round_counts.h"

#include <limits>

namespace hora {
namespace engine {
namespace round_counts {
namespace {

constexpr int64_t cube(int64_t b) { return b * b * b; }

// The largest job the engine takes must fit: (kMaxRanks + 1)^3 - 1 <= INT64_MAX, checked
// without overflowing (cube root of INT64_MAX is about 2.09e6).
static_assert(int64_t{kMaxRanks} + 1 <= 2'000'000 &&
                  cube(int64_t{kMaxRanks} + 1) - 1 <= std::numeric_limits<int64_t>::max(),
              "the round's int64 position words cannot count kMaxRanks ranks");

}  // namespace

int64_t position_word(bool ready, bool holds, bool invalidates, int size) {
  const int64_t base = int64_t{size} + 1;
  return (ready ? 1 : 0) + (holds ? base : 0) + (invalidates ? base * base : 0);
}

PositionCounts decode_position(int64_t word, int size) {
  const int64_t base = int64_t{size} + 1;
  PositionCounts c;
  c.ready = word % base;
  c.held = (word / base) % base;
  c.invalidated = word / (base * base);
  return c;
}

int64_t max_position_word(int size) { return cube(int64_t{size} + 1) - 1; }

}  // namespace round_counts
}  // namespace engine
}  // namespace hora
