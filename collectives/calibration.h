// Allreduce calibration: every candidate algorithm (ring, tree, rd, native, hierarchical: what
// the selector's table offers for the communicator) timed at a few probe sizes on the job's own
// communicator at init, so the selector chooses from this machine's figures rather than the
// table fitted on another one. Under the affinity the launcher gave (a core per rank under
// mpirun's binding, shared cores under horarun or a cgroup limit) the probe measures what the
// job will get, which is how that affinity enters the choice.
//
// Agreement: each rank keeps its median round per (algorithm, size); the figures are then
// allreduced with max (the collective takes as long as its slowest rank; max is exact and
// order-free, so every rank holds bitwise identical figures) and every decision (the budget
// cut, the choice per size) is a pure function of the agreed figures. Every rank therefore
// picks the same algorithm for every size, which the job needs: ranks that disagree deadlock.
//
// An AllreduceCalibration is built once (Context at init, tests) and read-only after: safe to
// read from any thread. The Topology carries it to the selector (Topology::calibration).
#pragma once

#include <atomic>
#include <chrono>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collectives/selector.h"
#include "core/base/deadline.h"
#include "hora/status.h"

namespace hora {
namespace collectives {

struct AllreduceCalibration {
  std::string cost_model;             // Communicator::cost_model() it was measured on
  std::vector<size_t> sizes;          // probe sizes in bytes, ascending
  std::vector<Algorithm> algorithms;  // the candidates measured
  // us[a][s]: agreed microseconds per call of algorithms[a] at sizes[s] (the slowest rank's
  // median round). Every row has sizes.size() entries.
  std::vector<std::vector<double>> us;
  // Probe sizes whose figures overturned the table's choice and were measured again (step 5
  // of calibration.cc), for the log line.
  std::vector<size_t> confirmed;
  double took_ms = 0;  // the calibration's own wall time on this rank (not agreed; for logs)

  // True when it holds figures for `cost_model` (the selector ignores it otherwise).
  bool applies_to(const std::string& model) const {
    return !sizes.empty() && !algorithms.empty() && cost_model == model;
  }
  // The same for a Communicator::cost_model(), a string literal: the one last found equal is
  // known by its address, without a string compare on auto's every allreduce (an eighth of
  // its own instructions around an 8-byte shared-memory allreduce). Any other string: the
  // overload above.
  bool applies_to(const char* model) const {
    if (model != nullptr && model == matched_model_.load(std::memory_order_relaxed)) return true;
    if (model == nullptr || sizes.empty() || algorithms.empty() || cost_model != model)
      return false;
    matched_model_.store(model, std::memory_order_relaxed);
    return true;
  }
  // Estimated microseconds of `algorithm` at `bytes`: the probes' figures interpolated
  // linearly in bytes between neighbouring probe sizes; below the smallest probe its figure;
  // above the largest, extended along the slope of the last two (a per-byte cost, never
  // negative). -1 when `algorithm` was not measured.
  double estimate_us(Algorithm algorithm, size_t bytes) const;
  // One line per probe size: "<bytes> B: ring 12.3 tree 14.0 ... -> <choice>".
  std::string describe() const;

  // The selector's memo of its choices on this calibration (its ranks, cost model and
  // topology are fixed, so a choice depends on the size alone): true and *algorithm when
  // `bytes` was chosen for before. Any thread; lock-free (a direct-mapped table of atomic
  // words: a collision only forgets). Copies start with an empty memo.
  // Inline: auto's every allreduce asks it.
  bool cached_choice(size_t bytes, Algorithm* algorithm) const {
    if (bytes > kLargestCached) return false;
    const uint64_t word = choices_[choice_slot(bytes)].load(std::memory_order_relaxed);
    if (word == 0 || (word >> 8) != uint64_t{bytes} + 1) return false;
    *algorithm = static_cast<Algorithm>(word & 0xff);
    return true;
  }
  void cache_choice(size_t bytes, Algorithm algorithm) const;

  AllreduceCalibration() = default;
  AllreduceCalibration(const AllreduceCalibration& other) { *this = other; }
  AllreduceCalibration& operator=(const AllreduceCalibration& other) {
    cost_model = other.cost_model;
    sizes = other.sizes;
    algorithms = other.algorithms;
    us = other.us;
    confirmed = other.confirmed;
    took_ms = other.took_ms;
    for (auto& c : choices_) c.store(0, std::memory_order_relaxed);
    matched_model_.store(nullptr, std::memory_order_relaxed);
    return *this;
  }

 private:
  static constexpr size_t kChoices = 64;
  static constexpr uint64_t kLargestCached = (uint64_t{1} << 56) - 2;
  static size_t choice_slot(size_t bytes) {
    return (bytes ^ (bytes >> 7) ^ (bytes >> 17)) % kChoices;
  }
  // (bytes + 1) << 8 | algorithm; 0: empty. Sizes of 2^56 bytes and more are never cached.
  mutable std::atomic<uint64_t> choices_[kChoices] = {};
  // The address of the cost model applies_to() last found equal to cost_model; null: none.
  mutable std::atomic<const char*> matched_model_{nullptr};
};

struct CalibrationOptions {
  // Probe sizes in bytes, ascending; each a multiple of 4 (float32 elements).
  // 16 and 32 KiB straddle the shared-memory allreduce's switch from one sync point to chunks
  // (shm_allreduce.h), where its time steps up and rd can win; 4 and 8 KiB find where rd
  // starts to win below that (an estimate between 1 and 16 KiB is a straight line, and
  // native's time is not: rd ran 10-15% faster at 8 KiB where the line chose native).
  std::vector<size_t> sizes = {8,         1024,       4u << 10,   8u << 10, 16u << 10,
                               32u << 10, 128u << 10, 512u << 10, 2u << 20, 8u << 20};
  // A larger probe is skipped (and every one after it) when the agreed time spent plus its
  // projected cost would exceed this; the first two sizes are always measured.
  std::chrono::milliseconds budget{100};
  // Rounds per algorithm and size (after each one's warm-up, below); in each round a
  // candidate makes one untimed call, then a timed burst of back-to-back calls (3 up to
  // 512 KiB, 2 above). A rank's figure is its median round (of two, the faster).
  int repeats_small = 5;  // sizes up to 128 KiB
  // The untimed warm-up of each candidate at a size streams about this many bytes (at least
  // one call, at most kMaxWarmupCalls; one call below 1 KiB), so that it runs in the state a
  // job's stream of calls keeps it in (the shared-memory allreduce takes its slots window
  // after window, ShmExchange::slot, and its first pass over them is the slowest).
  size_t warmup_bytes = size_t{2} << 20;
  int repeats_large = 2;  // larger sizes
  // Each collective call's deadline: at most this after the call (a timed burst: its first
  // call) starts, besides the calibration's own deadline; zero: that deadline alone. So a peer
  // that stops is named within it, as in any collective (HORA_TIMEOUT_S), while a slow but
  // live calibration (ranks sharing cores) is not cut off by a deadline over all its calls.
  std::chrono::milliseconds call_timeout{0};
  // Tests: replaces this rank's measured figure before agreement (the agreed figures must
  // still be identical on every rank). Null: none.
  std::function<double(Algorithm algorithm, size_t bytes, double measured_us)> skew;
};

// Times every candidate of explain_allreduce(size, comm.size(), comm.cost_model(), topology)
// (those with an estimate >= 0) at each probe size with run_allreduce on float32 sum, and
// agrees on the figures as described above. Collective: every rank of `comm` must call it
// with equal options and topology. Blocks until done or `deadline` (the algorithms' errors,
// e.g. kTimeout naming a peer, with " (allreduce calibration)" appended). Allocates two
// buffers of the largest probe size for the call's duration. With one rank, returns an
// empty calibration at once. REQUIRES: topology, when not null, is of comm's ranks.
StatusOr<AllreduceCalibration> calibrate_allreduce(Communicator& comm, const Topology* topology,
                                                   const CalibrationOptions& options,
                                                   Deadline deadline);

}  // namespace collectives
}  // namespace hora
