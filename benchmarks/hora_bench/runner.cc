// The timing loop (see runner.h).
#include "benchmarks/hora_bench/runner.h"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>

#include "benchmarks/hora_bench/check.h"
#include "benchmarks/hora_bench/sweep_memory.h"
#include "collectives/algorithms/algorithms.h"

namespace hora {
namespace bench {
namespace {

using Clock = std::chrono::steady_clock;

collectives::AlgorithmOptions control_options(double timeout_s) {
  collectives::AlgorithmOptions o;
  o.deadline = Deadline::after_seconds(timeout_s);
  o.tag = 0x62656e63;  // "benc"
  return o;
}

// Sets up the call's pointers for the placement: in place, the rank's block is shared.
Call make_call(const SweepSettings& s, size_t count, bool in_place, uint8_t* a, uint8_t* b) {
  const Options& o = s.options;
  Call c;
  c.collective = o.collective;
  c.count = count;
  c.dtype = o.dtype;
  c.op = o.op;
  c.root = o.root;
  c.in_place = in_place;
  const size_t block = count * data_type_bytes(o.dtype) * static_cast<size_t>(s.rank);
  if (!in_place) {
    c.in = a;
    c.out = b;
  } else if (o.collective == Collective::kAllgather) {
    c.out = b;
    c.in = b + block;
  } else if (o.collective == Collective::kReducescatter) {
    c.in = a;
    c.out = a + block;
  } else {
    c.in = a;
    c.out = a;
  }
  return c;
}

CheckCall check_call(const SweepSettings& s, size_t count) {
  CheckCall cc;
  cc.collective = s.options.collective;
  cc.dtype = s.options.dtype;
  cc.op = s.options.op;
  cc.count = count;
  cc.rank = s.rank;
  cc.ranks = s.ranks;
  cc.root = s.options.root;
  return cc;
}

// Writes the rank's input where the call reads it (through a host copy for GPU buffers).
Status fill(const SweepSettings& s, const Call& c, SweepMemory& memory) {
  const CheckCall cc = check_call(s, c.count);
  if (!memory.on_device()) {
    fill_input(cc, const_cast<void*>(c.in));
    return Status::OK();
  }
  std::vector<uint8_t> host(input_elements(cc.collective, cc.count, cc.ranks) *
                            data_type_bytes(cc.dtype));
  fill_input(cc, host.data());
  return memory.upload(const_cast<void*>(c.in), host.data(), host.size());
}

// The number of wrong elements in the call's output (read through a host copy on a GPU).
StatusOr<int64_t> wrong_in(const SweepSettings& s, const Call& c, SweepMemory& memory) {
  const CheckCall cc = check_call(s, c.count);
  if (!memory.on_device()) return count_wrong(cc, c.out);
  std::vector<uint8_t> host(output_elements(cc.collective, cc.count, cc.ranks) *
                            data_type_bytes(cc.dtype));
  HORA_RETURN_IF_ERROR(memory.download(host.data(), c.out, host.size()));
  return count_wrong(cc, host.data());
}

// Any rank's failure to support a call, agreed by all (supports() is deterministic, but a
// max keeps every rank on the same path regardless).
StatusOr<bool> agreed(collectives::Communicator& control, bool ok, double timeout_s) {
  int64_t flag = ok ? 0 : 1;
  HORA_RETURN_IF_ERROR(collectives::recursive_doubling_allreduce(
      control, &flag, &flag, 1, DataType::kInt64, ReduceOp::kMax, control_options(timeout_s)));
  return flag == 0;
}

// One implementation at one size and placement while its rounds run.
struct Timing {
  Implementation* impl = nullptr;
  Measurement m;
  Call call;
  std::vector<double> samples;       // every round's, in microseconds
  std::vector<size_t> round_starts;  // where each round's samples begin
};

// Sets up the measurement; m.available false (with a note) when some rank cannot run it.
StatusOr<Timing> prepare(const SweepSettings& s, Implementation& impl, size_t count, bool in_place,
                         SweepMemory& memory, collectives::Communicator& control) {
  const Options& o = s.options;
  Timing t;
  t.impl = &impl;
  Measurement& m = t.m;
  m.impl = impl.name();
  m.is_hora = impl.is_hora();
  m.is_reference = impl.is_reference();
  m.in_place = in_place;
  m.count = count;
  m.size_bytes = size_for_count(o.collective, count, o.dtype, s.ranks);
  t.call = make_call(s, count, in_place, memory.a(), memory.b());
  t.call.on_device = memory.on_device();
  m.choice = impl.choice(t.call);
  Status supported = impl.supports(t.call);
  HORA_ASSIGN_OR_RETURN(bool all_supported, agreed(control, supported.ok(), s.timeout_s));
  if (!all_supported) {
    m.available = false;
    m.note = supported.ok() ? "not supported on another rank" : supported.message();
    m.wrong = -1;
  }
  return t;
}

Status run_once(const SweepSettings& s, Timing& t) {
  t.call.deadline = Deadline::after_seconds(s.timeout_s);
  Status st = t.impl->run(t.call);
  if (!st.ok()) {
    return st.with_context(t.m.impl + " " + collective_name(s.options.collective) + " of " +
                           std::to_string(t.m.size_bytes) + " B on rank " + std::to_string(s.rank));
  }
  return st;
}

// One round: the engine set as the implementation needs, a fresh input, a barrier, the warmup
// calls, then -n timed calls (with --min-ms, as many more as the round needs) appended to
// t.samples.
Status time_round(const SweepSettings& s, Timing& t, SweepMemory& memory,
                  collectives::Communicator& control) {
  const Options& o = s.options;
  if (s.set_engine) HORA_RETURN_IF_ERROR(s.set_engine(t.impl->uses_engine()));
  HORA_RETURN_IF_ERROR(fill(s, t.call, memory));
  HORA_RETURN_IF_ERROR(collectives::dissemination_barrier(control, control_options(s.timeout_s)));
  for (int i = 0; i < o.warmup; ++i) HORA_RETURN_IF_ERROR(run_once(s, t));
  t.round_starts.push_back(t.samples.size());
  const auto timed = [&](int64_t iterations) -> Status {
    for (int64_t i = 0; i < iterations; ++i) {
      const auto start = Clock::now();
      HORA_RETURN_IF_ERROR(run_once(s, t));
      t.samples.push_back(std::chrono::duration<double, std::micro>(Clock::now() - start).count());
    }
    return Status::OK();
  };
  const auto round_start = Clock::now();
  HORA_RETURN_IF_ERROR(timed(o.iters));
  if (o.min_ms <= 0) return Status::OK();
  const double spent_us =
      std::chrono::duration<double, std::micro>(Clock::now() - round_start).count();
  int64_t more = more_iterations(o.iters, spent_us, o.min_ms * 1e3);
  // Every rank must run the same count: the largest any rank asks for, agreed like the flags.
  HORA_RETURN_IF_ERROR(collectives::recursive_doubling_allreduce(
      control, &more, &more, 1, DataType::kInt64, ReduceOp::kMax, control_options(s.timeout_s)));
  return timed(more);
}

// The statistics over every round (the slowest rank's) and, with -c 1, the check.
Status finish(const SweepSettings& s, Timing& t, SweepMemory& memory,
              collectives::Communicator& control) {
  Measurement& m = t.m;
  if (s.set_engine) HORA_RETURN_IF_ERROR(s.set_engine(t.impl->uses_engine()));
  TimeStats stats = time_stats(t.samples);
  double times[3] = {stats.median_us, stats.p99_us, stats.max_us};
  HORA_RETURN_IF_ERROR(collectives::recursive_doubling_allreduce(
      control, times, times, 3, DataType::kFloat64, ReduceOp::kMax, control_options(s.timeout_s)));
  m.iterations = static_cast<int64_t>(t.samples.size());
  m.median_us = times[0];
  m.p99_us = times[1];
  m.max_us = times[2];
  if (t.round_starts.size() > 1) {
    m.round_median_us.clear();
    for (size_t r = 0; r < t.round_starts.size(); ++r) {
      const size_t end = r + 1 < t.round_starts.size() ? t.round_starts[r + 1] : t.samples.size();
      m.round_median_us.push_back(
          time_stats(std::vector<double>(
                         t.samples.begin() + static_cast<std::ptrdiff_t>(t.round_starts[r]),
                         t.samples.begin() + static_cast<std::ptrdiff_t>(end)))
              .median_us);
    }
    HORA_RETURN_IF_ERROR(collectives::recursive_doubling_allreduce(
        control, m.round_median_us.data(), m.round_median_us.data(), m.round_median_us.size(),
        DataType::kFloat64, ReduceOp::kMax, control_options(s.timeout_s)));
  }
  if (m.median_us > 0) {
    m.algbw_gbs = static_cast<double>(m.size_bytes) / (m.median_us * 1e3);
    m.busbw_gbs = m.algbw_gbs * busbw_factor(s.options.collective, s.ranks);
  }
  m.wrong = -1;
  if (s.options.check && !m.is_reference) {
    HORA_RETURN_IF_ERROR(fill(s, t.call, memory));
    HORA_RETURN_IF_ERROR(run_once(s, t));
    HORA_ASSIGN_OR_RETURN(int64_t wrong, wrong_in(s, t.call, memory));
    HORA_RETURN_IF_ERROR(collectives::recursive_doubling_allreduce(control, &wrong, &wrong, 1,
                                                                   DataType::kInt64, ReduceOp::kSum,
                                                                   control_options(s.timeout_s)));
    m.wrong = wrong;
  }
  return Status::OK();
}

// Every implementation at one size and placement, in `rounds` turns.
StatusOr<std::vector<Measurement>> measure_row(const SweepSettings& s,
                                               std::vector<std::unique_ptr<Implementation>>& impls,
                                               size_t count, bool in_place, SweepMemory& memory,
                                               collectives::Communicator& control) {
  std::vector<Timing> timings;
  for (auto& impl : impls) {
    HORA_ASSIGN_OR_RETURN(Timing t, prepare(s, *impl, count, in_place, memory, control));
    t.samples.reserve(static_cast<size_t>(s.options.iters) * s.options.rounds);
    timings.push_back(std::move(t));
  }
  const size_t n = timings.size();
  for (int round = 0; round < s.options.rounds; ++round) {
    for (size_t k = 0; k < n; ++k) {
      Timing& t = timings[round % 2 == 0 ? k : n - 1 - k];
      if (t.m.available) HORA_RETURN_IF_ERROR(time_round(s, t, memory, control));
    }
  }
  std::vector<Measurement> row;
  for (Timing& t : timings) {
    if (t.m.available) HORA_RETURN_IF_ERROR(finish(s, t, memory, control));
    row.push_back(t.m);
  }
  return row;
}

}  // namespace

int64_t more_iterations(int iters, double spent_us, double min_us) {
  if (iters <= 0 || !(spent_us < min_us)) return 0;
  const double per_call_us = std::max(spent_us / iters, 1e-3);
  const double wanted = std::ceil((min_us - spent_us) / per_call_us);
  return static_cast<int64_t>(
      std::min(wanted, static_cast<double>(kMaxIterationsPerRound - iters)));
}

TimeStats time_stats(std::vector<double> samples) {
  std::sort(samples.begin(), samples.end());
  const size_t n = samples.size();
  TimeStats t;
  t.median_us = n % 2 == 1 ? samples[n / 2] : (samples[n / 2 - 1] + samples[n / 2]) / 2;
  size_t p99 = static_cast<size_t>(std::ceil(0.99 * static_cast<double>(n)));
  t.p99_us = samples[std::min(n, std::max<size_t>(p99, 1)) - 1];
  t.max_us = samples.back();
  return t;
}

StatusOr<std::vector<Measurement>> run_sweep(
    const SweepSettings& s, std::vector<std::unique_ptr<Implementation>>& impls,
    collectives::Communicator& control,
    const std::function<void(const std::vector<Measurement>&)>& on_row) {
  const Options& o = s.options;
  const std::vector<size_t> sizes = sweep_sizes(o);
  size_t max_bytes = 0;
  for (size_t size : sizes) {
    const size_t count = count_for_size(o.collective, size, o.dtype, s.ranks);
    max_bytes = std::max(max_bytes, size_for_count(o.collective, count, o.dtype, s.ranks));
  }
  HORA_ASSIGN_OR_RETURN(std::unique_ptr<SweepMemory> memory,
                        make_sweep_memory(o.device, max_bytes));
  std::vector<Measurement> all;
  for (size_t size : sizes) {
    const size_t count = count_for_size(o.collective, size, o.dtype, s.ranks);
    for (bool in_place : {false, true}) {
      if (in_place && !s.run_in_place) continue;
      HORA_ASSIGN_OR_RETURN(std::vector<Measurement> row,
                            measure_row(s, impls, count, in_place, *memory, control));
      on_row(row);
      all.insert(all.end(), row.begin(), row.end());
    }
  }
  return all;
}

}  // namespace bench
}  // namespace hora
