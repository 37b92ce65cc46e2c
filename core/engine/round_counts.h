// The negotiation round's reduction vector (controller.h, step 2): what each rank adds, and
// how the sums read back. Pure arithmetic, no state.
//
// The vector is int64: kHeaderWords words, then one word per response-cache position.
// Header: [has-uncached, shutdown count, sum of the ranks asking to shut down, pause count,
// ranks that set any position word (zero: every position word is zero, and a round skips them)].
// Per position a rank adds 1 when it is ready, B = size + 1 when it holds the tensor, and B^2
// when it invalidates the position. Summed over `size` ranks each count is at most size < B,
// so the three counts are the base-B digits of the word, and the largest word (every rank
// ready, holding and invalidating) is size * (1 + B + B^2) = B^3 - 1.
//
// Why int64: with int32 words B^3 - 1 overflows from 1,290 ranks. With int64 it fits up to
// about 2 million ranks; the engine's limit is kMaxRanks (2^20), for which B^3 is about 2^60
// (static_assert in round_counts.cc), and validate_layout (core/layout.h) refuses larger jobs.
#pragma once

#include <cstdint>

namespace hora {
namespace engine {

// The largest job hora runs: what the round's int64 position words can count.
inline constexpr int kMaxRanks = 1 << 20;

namespace round_counts {

enum HeaderWord : int {
  kHasUncached = 0,  // some rank sends requests to the coordinator (or must be heard)
  kShutdownCount,    // ranks asking every rank to stop after this round
  kShutdownRankSum,  // the sum of their ranks: names the rank when only one asked
  kPauseCount,       // ranks asking to park their engines after this round
  kPositionRanks,    // ranks that set any position word (holding, ready or invalidating)
  kHeaderWords,
};

struct PositionCounts {
  int64_t ready = 0;        // ranks ready for the cached collective (holding it, or joined)
  int64_t held = 0;         // ranks holding the tensor
  int64_t invalidated = 0;  // ranks invalidating the position
};

// What one rank adds to a position word. REQUIRES: 1 <= size <= kMaxRanks; a rank that holds
// the tensor is also ready.
int64_t position_word(bool ready, bool holds, bool invalidates, int size);

// The counts of a word summed over at most `size` ranks' position_word()s.
PositionCounts decode_position(int64_t word, int size);

// The largest summed word at `size` ranks: (size + 1)^3 - 1.
int64_t max_position_word(int size);

}  // namespace round_counts
}  // namespace engine
}  // namespace hora
