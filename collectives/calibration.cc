// The calibration's probe loop (calibrate_allreduce), its interpolation and its log line.
//
// Schedule, for each probe size s in ascending order:
//   1. Stop when the agreed time spent so far plus the projected cost of s (the previous
//      size's agreed time scaled by the size ratio) exceeds options.budget (never before the
//      third size): the decision reads only agreed figures, so every rank stops alike.
//   2. An untimed warm-up of every candidate at s (scratch pages, shm slots, caches): calls
//      streaming options.warmup_bytes, the same number on every rank.
//   3. `repeats` rounds, each visiting every candidate in turn (interleaved, so a burst of
//      other work on the machine lands on all candidates rather than one): one untimed call,
//      so that the candidate's own data is back in the caches the others' calls evicted it
//      from, then a timed burst of back-to-back calls, as a job makes them. Each rank keeps
//      per candidate the median of its rounds' time per call (of two rounds, the faster).
//   4. The figures, plus this rank's time spent on s, are allreduced with max (rd over comm,
//      float64): the agreed row for s.
//   5. Where that row would overturn the table's own choice at s (the table's candidate more
//      than kCalibratedMargin slower than the fastest), the two run `repeats` more rounds and
//      their figures are the medians over all their rounds, agreed again: one slow moment of
//      the machine (native at 8 MiB measured 1.5x its usual time in 2 of 10 inits under
//      mpirun) then cannot alone move the job's choice off the table's.
#include "collectives/calibration.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <new>

#include "collectives/algorithms/algorithms.h"
#include "collectives/scratch_pool.h"

namespace hora {
namespace collectives {
namespace {

using Clock = std::chrono::steady_clock;

double micros_since(Clock::time_point start) {
  return std::chrono::duration<double, std::micro>(Clock::now() - start).count();
}

// Tag of the calibration's agreement allreduce ("cali"): distinct from the probes' own.
constexpr uint32_t kAgreeTag = 0x63616c69;

// The warm-up (CalibrationOptions::warmup_bytes): one call below this size (nothing there
// depends on what the calls before it touched), and never more calls than this.
constexpr size_t kWarmupFrom = 1024;
constexpr size_t kMaxWarmupCalls = 512;

// The probes' buffers start on a cache line, as the tensors of PyTorch's and TensorFlow's CPU
// allocators (64-byte aligned), the engine's fusion buffer and hora-bench's buffers do. A
// std::vector of the largest probe size comes from mmap, 16 bytes past a page, where the
// shared-memory allreduce's reduction reads across cache lines (native at 8 MiB about 5%
// slower in a steady loop, ring not): the probes would measure what only such buffers cost.
class AlignedFloats {
 public:
  AlignedFloats(size_t count, float value)
      : data_(static_cast<float*>(::operator new(count * sizeof(float), kAlign))) {
    std::fill(data_.get(), data_.get() + count, value);
  }
  float* data() { return data_.get(); }

 private:
  static constexpr std::align_val_t kAlign{64};
  struct Free {
    void operator()(float* p) const { ::operator delete(p, kAlign); }
  };
  std::unique_ptr<float, Free> data_;
};

// One calibration's probes (steps 2-5 of the schedule above) over its candidates
// cal.algorithms, into cal. Steps 2-5 each run on every rank alike.
class Prober {
 public:
  Prober(Communicator& comm, const Topology* topology, const CalibrationOptions& options,
         Deadline deadline, AllreduceCalibration& cal, size_t max_count)
      : comm_(comm),
        topology_(topology),
        options_(options),
        deadline_(deadline),
        cal_(cal),
        m_(cal.algorithms.size()),
        in_(max_count, 1.0f),
        out_(max_count, 0.0f) {
    ao_.deadline = deadline;
    ao_.scratch = &scratch_;
    ao_.topology = topology;
    agree_ = ao_;
    agree_.tag = kAgreeTag;
  }

  // Steps 2-5 at `bytes`: the agreed row, m figures and then the time spent on the size.
  StatusOr<std::vector<double>> probe(size_t bytes) {
    bytes_ = bytes;
    count_ = std::max<size_t>(bytes / sizeof(float), 1);
    const auto size_start = Clock::now();
    std::vector<double> row(m_ + 1, std::numeric_limits<double>::infinity());
    HORA_RETURN_IF_ERROR(warm_up());
    repeats_ = std::max(bytes <= (128u << 10) ? options_.repeats_small : options_.repeats_large, 1);
    burst_ = bytes <= (512u << 10) ? 3 : 2;
    samples_.assign(m_, {});
    std::vector<size_t> every(m_);
    for (size_t a = 0; a < m_; ++a) every[a] = a;
    HORA_RETURN_IF_ERROR(time_rounds(every));
    for (size_t a = 0; a < m_; ++a) row[a] = figure(a);
    row[m_] = micros_since(size_start);
    HORA_RETURN_IF_ERROR(recursive_doubling_allreduce(comm_, row.data(), row.data(), row.size(),
                                                      DataType::kFloat64, ReduceOp::kMax,
                                                      starting_now(agree_)));
    HORA_RETURN_IF_ERROR(confirm_overturn(row));
    return row;
  }

 private:
  // `base` with the deadline of a call starting now (options.call_timeout).
  AlgorithmOptions starting_now(AlgorithmOptions base) const {
    if (options_.call_timeout.count() > 0) {
      const Deadline call(Clock::now() + options_.call_timeout);
      if (call.at() < deadline_.at()) base.deadline = call;
    }
    return base;
  }

  Status run(size_t a, const AlgorithmOptions& call) {
    return run_allreduce(cal_.algorithms[a], comm_, in_.data(), out_.data(), count_,
                         DataType::kFloat32, ReduceOp::kSum, call);
  }

  // 2. The untimed warm-up of every candidate.
  Status warm_up() {
    const size_t warmup_calls =
        bytes_ < kWarmupFrom
            ? 1
            : std::clamp<size_t>(options_.warmup_bytes / bytes_, 1, kMaxWarmupCalls);
    for (size_t a = 0; a < m_; ++a) {
      for (size_t w = 0; w < warmup_calls; ++w) HORA_RETURN_IF_ERROR(run(a, starting_now(ao_)));
    }
    return Status::OK();
  }

  // 3. `repeats` rounds over the candidates `which`, each sample appended to samples[a].
  Status time_rounds(const std::vector<size_t>& which) {
    for (int r = 0; r < repeats_; ++r) {
      for (size_t a : which) {
        Clock::time_point t0;
        const AlgorithmOptions call = starting_now(ao_);  // once a burst: no clock per call
        for (int b = 0; b <= burst_; ++b) {
          if (b == 1) t0 = Clock::now();  // after one untimed call: this candidate's data warm
          HORA_RETURN_IF_ERROR(run(a, call));
        }
        samples_[a].push_back(micros_since(t0) / burst_);
      }
    }
    return Status::OK();
  }

  // This rank's figure for candidate a: the median of its samples (skewed, in tests).
  double figure(size_t a) const {
    std::vector<double> v = samples_[a];
    std::sort(v.begin(), v.end());
    const double median = v[(v.size() - 1) / 2];
    return options_.skew ? options_.skew(cal_.algorithms[a], bytes_, median) : median;
  }

  // 5. A probe that would overturn the table's choice is confirmed (the agreed row decides,
  //    so every rank confirms alike): the two run `repeats` more rounds, and their figures
  //    become the medians over all their rounds, agreed again.
  Status confirm_overturn(std::vector<double>& row) {
    const size_t table = static_cast<size_t>(
        std::find(cal_.algorithms.begin(), cal_.algorithms.end(),
                  table_allreduce_choice(bytes_, comm_.size(), cal_.cost_model, topology_)) -
        cal_.algorithms.begin());
    const size_t best =
        static_cast<size_t>(std::min_element(row.begin(), row.begin() + m_) - row.begin());
    if (table >= m_ || best == table || row[table] <= row[best] * kCalibratedMargin)
      return Status::OK();
    const auto confirm_start = Clock::now();
    HORA_RETURN_IF_ERROR(time_rounds({table, best}));
    double again[3] = {figure(table), figure(best), micros_since(confirm_start)};
    HORA_RETURN_IF_ERROR(recursive_doubling_allreduce(comm_, again, again, 3, DataType::kFloat64,
                                                      ReduceOp::kMax, starting_now(agree_)));
    row[table] = again[0];
    row[best] = again[1];
    row[m_] += again[2];
    cal_.confirmed.push_back(bytes_);
    return Status::OK();
  }

  Communicator& comm_;
  const Topology* topology_;
  const CalibrationOptions& options_;
  const Deadline deadline_;
  AllreduceCalibration& cal_;
  const size_t m_;  // candidates
  AlignedFloats in_, out_;
  ScratchPool scratch_;
  AlgorithmOptions ao_;     // the probes'
  AlgorithmOptions agree_;  // the agreement allreduce's
  // The size being probed.
  size_t bytes_ = 0;
  size_t count_ = 0;
  int repeats_ = 1;
  int burst_ = 2;
  std::vector<std::vector<double>> samples_;
};

}  // namespace

double AllreduceCalibration::estimate_us(Algorithm algorithm, size_t bytes) const {
  const auto it = std::find(algorithms.begin(), algorithms.end(), algorithm);
  if (it == algorithms.end() || sizes.empty()) return -1;
  const std::vector<double>& t = us[static_cast<size_t>(it - algorithms.begin())];
  const double b = static_cast<double>(bytes);
  if (bytes <= sizes.front()) return t.front();
  for (size_t k = 1; k < sizes.size(); ++k) {
    if (bytes <= sizes[k]) {
      const double lo = static_cast<double>(sizes[k - 1]);
      const double hi = static_cast<double>(sizes[k]);
      return t[k - 1] + (t[k] - t[k - 1]) * (b - lo) / (hi - lo);
    }
  }
  const size_t last = sizes.size() - 1;
  const double top = static_cast<double>(sizes[last]);
  double per_byte = t[last] / top;  // one probe only: proportional
  if (last > 0) {
    const double slope = (t[last] - t[last - 1]) / (top - static_cast<double>(sizes[last - 1]));
    if (slope > 0) per_byte = slope;
  }
  return t[last] + (b - top) * per_byte;
}

void AllreduceCalibration::cache_choice(size_t bytes, Algorithm algorithm) const {
  if (bytes > kLargestCached) return;
  choices_[choice_slot(bytes)].store(((uint64_t{bytes} + 1) << 8) | static_cast<uint8_t>(algorithm),
                                     std::memory_order_relaxed);
}

std::string AllreduceCalibration::describe() const {
  std::string text;
  for (size_t s = 0; s < sizes.size(); ++s) {
    char part[64];
    std::snprintf(part, sizeof part, "%s%zu B:", s == 0 ? "" : "; ", sizes[s]);
    text += part;
    size_t best = 0;
    for (size_t a = 0; a < algorithms.size(); ++a) {
      std::snprintf(part, sizeof part, " %s %.1f", algorithm_name(algorithms[a]), us[a][s]);
      text += part;
      if (us[a][s] < us[best][s]) best = a;
    }
    if (!algorithms.empty()) text += std::string(" -> ") + algorithm_name(algorithms[best]);
    if (std::find(confirmed.begin(), confirmed.end(), sizes[s]) != confirmed.end())
      text += " (confirmed)";
  }
  return text;
}

StatusOr<AllreduceCalibration> calibrate_allreduce(Communicator& comm, const Topology* topology,
                                                   const CalibrationOptions& options,
                                                   Deadline deadline) {
  const auto started = Clock::now();
  AllreduceCalibration cal;
  if (comm.size() <= 1 || options.sizes.empty()) return cal;
  cal.cost_model = comm.cost_model();
  for (const Selection& s : explain_allreduce(8, comm.size(), cal.cost_model, topology)) {
    if (s.estimated_us >= 0) cal.algorithms.push_back(s.algorithm);
  }
  const size_t m = cal.algorithms.size();
  cal.us.assign(m, {});
  const size_t largest = *std::max_element(options.sizes.begin(), options.sizes.end());
  Prober prober(comm, topology, options, deadline, cal,
                std::max<size_t>(largest / sizeof(float), 1));

  const double budget_us = 1000.0 * static_cast<double>(options.budget.count());
  double spent_us = 0;      // agreed, over every size so far
  double last_size_us = 0;  // agreed, on the previous size
  for (size_t k = 0; k < options.sizes.size(); ++k) {
    const size_t bytes = options.sizes[k];
    // 1. The next size costs about the last one's time scaled by the size ratio.
    const double projected =
        k == 0 ? 0
               : last_size_us * static_cast<double>(bytes) /
                     static_cast<double>(std::max<size_t>(options.sizes[k - 1], 1));
    if (k >= 2 && spent_us + projected > budget_us) break;
    StatusOr<std::vector<double>> row = prober.probe(bytes);
    if (!row.ok()) return row.status().with_context(" (allreduce calibration)");
    cal.sizes.push_back(bytes);
    for (size_t a = 0; a < m; ++a) cal.us[a].push_back((*row)[a]);
    spent_us += (*row)[m];
    last_size_us = (*row)[m];
  }
  cal.took_ms = micros_since(started) / 1000.0;
  return cal;
}

}  // namespace collectives
}  // namespace hora
