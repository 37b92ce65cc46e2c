#include "collectives/selector.h"

#include <cmath>

#include "collectives/algorithms/buffer_access.h"
#include "collectives/algorithms/hierarchical.h"
#include "collectives/calibration.h"
#include "core/base/name_table.h"
#include "hora/logging.h"

namespace hora {
namespace collectives {
namespace {

// The cost constants, one row per backend. hora's own algorithms cost alpha per message step,
// beta per byte sent and gamma per byte reduced (flat_us and hierarchical below count the
// steps); a backend's native allreduce costs native_alpha + bytes / native_busbw (nccl-tests'
// bus bandwidth), and native_collapsed_busbw from native_collapse_bytes on (stock Open MPI
// touches fresh scratch pages per call from 4 MiB). Each row is fitted to hora-bench sweeps of
// its backend at 2 and 4 ranks (`hora-bench allreduce --compare hora,...`; builtin-shm's native
// row to shm_allreduce_bench): the (alpha, beta, gamma) whose choice among ring, tree and rd
// loses least against the fastest measured algorithm at every size. The selector needs only
// where the algorithms cross over; the calibration at init (calibration.h, HORA_CALIBRATE_MS)
// and the engine's tuner (HORA_AUTOTUNE) replace the table's choice with the job's own figures.
// The nccl row is an estimate, not a fit, so auto takes native there; ring, tree and rd stay
// available (HORA_ALLREDUCE_ALGO) for determinism across rank counts and for dtypes NCCL cannot
// reduce (int16, uint16, bool). The last row serves any other backend (the tests' in-process
// one).
struct BackendCosts {
  const char* backend;
  bool has_hora_algorithms;
  double alpha_us;
  double beta_us_per_byte;
  double gamma_us_per_byte;
  bool has_native;
  double native_alpha_us;
  double native_busbw_bytes_per_us;
  size_t native_collapse_bytes;  // 0: no collapse
  double native_collapsed_busbw_bytes_per_us;
};

constexpr double kGBs = 1000.0;  // 1 GB/s in bytes per microsecond

const BackendCosts kCosts[] = {
    // backend   hora   alpha  beta             gamma           native alpha  busbw
    {"gloo", true, 207.0, 1.0 / (0.75 * kGBs), 1.0 / (1.16 * kGBs), true, 2700.0, 0.4 * kGBs, 0, 0},
    {"mpi", true, 1.3, 1.0 / (3.0 * kGBs), 1.0 / (6.0 * kGBs), true, 2.0, 1.7 * kGBs, 4u << 20,
     0.2 * kGBs},
    {"builtin", true, 68.0, 1.0 / (1.16 * kGBs), 1.0 / (1.16 * kGBs), false, 0, 0, 0, 0},
    {"builtin-shm", true, 68.0, 1.0 / (1.16 * kGBs), 1.0 / (1.16 * kGBs), true, 0.1, 2.5 * kGBs, 0,
     0},
    {"nccl", true, 30.0, 1.0 / (20.0 * kGBs), 1.0 / (1000.0 * kGBs), true, 8.0, 100.0 * kGBs, 0, 0},
    // Any other backend (e.g. the tests' in-process one): gloo's point-to-point costs and no
    // native allreduce assumed.
    {"", true, 207.0, 1.0 / (0.75 * kGBs), 1.0 / (1.16 * kGBs), false, 0, 0, 0, 0},
};
constexpr size_t kNumBackends = sizeof(kCosts) / sizeof(kCosts[0]);

const BackendCosts& costs_for(const std::string& backend) {
  for (size_t k = 0; k + 1 < kNumBackends; ++k) {
    if (backend == kCosts[k].backend) return kCosts[k];
  }
  return kCosts[kNumBackends - 1];
}

// The segment size the estimate assumes: AlgorithmOptions' default.
double default_segment_bytes() { return static_cast<double>(AlgorithmOptions().segment_bytes); }

// One link's per-message and per-byte cost.
struct Link {
  double alpha_us;
  double beta_us_per_byte;
};

// hora's flat algorithm `algorithm` (ring, tree or rd) on n ranks over `link`, with
// `gamma_us_per_byte` per reduced byte. REQUIRES: n > 1, b > 0.
double flat_us(Algorithm algorithm, const Link& link, double gamma_us_per_byte, double b,
               double n) {
  switch (algorithm) {
    case Algorithm::kRing:
      // 2 (n - 1) steps; each rank moves 2 (n - 1) / n of the buffer, reduces (n - 1) / n.
      return 2 * (n - 1) * link.alpha_us + 2 * (n - 1) / n * b * link.beta_us_per_byte +
             (n - 1) / n * b * gamma_us_per_byte;
    case Algorithm::kTree: {
      // Pipelined: (depth + segments - 1) segment times up and again down; an interior rank
      // sends each segment to (up to) two children.
      const double depth = std::floor(std::log2(n));
      const double seg = std::min(b, default_segment_bytes());
      const double segments = std::ceil(b / seg);
      const double fanout = std::min(2.0, n - 1);
      return 2 * (depth + segments - 1) * (link.alpha_us + fanout * seg * link.beta_us_per_byte) +
             fanout * b * gamma_us_per_byte;
    }
    case Algorithm::kRecursiveDoubling: {
      // log2(p) whole-buffer exchanges, plus a fold in and out when n is not a power of two.
      double p = 1;
      while (p * 2 <= n) p *= 2;
      const double rounds = std::log2(p);
      const double fold = (p == n) ? 0 : 2;
      return (rounds + fold) * (link.alpha_us + b * link.beta_us_per_byte) +
             (rounds + fold / 2) * b * gamma_us_per_byte;
    }
    default: return -1;
  }
}

Link link_or(const LinkCosts& measured, const Link& fallback) {
  return measured.measured ? Link{measured.alpha_us, measured.beta_us_per_byte} : fallback;
}

// Hierarchical on topology t (more than one host): see estimate_allreduce_us's overload.
double hierarchical_us(const BackendCosts& c, const Link& intra, const Link& cross, double b,
                       const Topology& t) {
  const double lanes = t.lanes();
  const double most = t.max_local_size();
  const double slice = b / lanes;
  double us = 0;
  if (most > 1) {
    // Reduce-scatter and allgather within the host: (L - 1) steps each of one lane block.
    us += 2 * (most - 1) * (intra.alpha_us + slice * intra.beta_us_per_byte) +
          (most - 1) * slice * c.gamma_us_per_byte;
  }
  const Link shared{cross.alpha_us, cross.beta_us_per_byte * lanes};
  const Algorithm across = slice <= static_cast<double>(kHierarchicalRdMaxBytes)
                               ? Algorithm::kRecursiveDoubling
                               : Algorithm::kRing;
  return us + flat_us(across, shared, c.gamma_us_per_byte, slice, t.hosts());
}

// Indexed by the Algorithm value.
constexpr const char* kAlgorithmNames[] = {"auto", "ring", "tree", "rd", "native", "hierarchical"};
constexpr NameAlias<Algorithm> kAlgorithmAliases[] = {
    {"recursive_doubling", Algorithm::kRecursiveDoubling}};
static_assert(std::size(kAlgorithmNames) == static_cast<size_t>(Algorithm::kHierarchical) + 1);

}  // namespace

const char* algorithm_name(Algorithm algorithm) { return name_of(kAlgorithmNames, algorithm); }

StatusOr<Algorithm> parse_algorithm(const std::string& text) {
  if (auto algorithm = find_name(kAlgorithmNames, kAlgorithmAliases, text)) return *algorithm;
  return Status::invalid_argument("unknown allreduce algorithm '" + text +
                                  "' (HORA_ALLREDUCE_ALGO): expected auto, ring, tree, rd, "
                                  "native or hierarchical");
}

double estimate_allreduce_us(Algorithm algorithm, const std::string& backend, size_t bytes,
                             int ranks) {
  HORA_CHECK(algorithm != Algorithm::kAuto) << "estimate of kAuto";
  const BackendCosts& c = costs_for(backend);
  const double b = static_cast<double>(bytes);
  const double n = ranks;
  if (algorithm == Algorithm::kNative) {
    if (!c.has_native) return -1;
    if (ranks <= 1 || bytes == 0) return 0;
    double busbw = (c.native_collapse_bytes != 0 && bytes >= c.native_collapse_bytes)
                       ? c.native_collapsed_busbw_bytes_per_us
                       : c.native_busbw_bytes_per_us;
    return c.native_alpha_us + 2 * (n - 1) / n * b / busbw;
  }
  if (algorithm == Algorithm::kHierarchical) return -1;  // needs a topology
  if (!c.has_hora_algorithms) return -1;
  if (ranks <= 1 || bytes == 0) return 0;
  return flat_us(algorithm, Link{c.alpha_us, c.beta_us_per_byte}, c.gamma_us_per_byte, b, n);
}

double estimate_allreduce_us(Algorithm algorithm, const std::string& backend, size_t bytes,
                             const Topology& topology) {
  HORA_CHECK(algorithm != Algorithm::kAuto) << "estimate of kAuto";
  const int ranks = topology.size();
  if (topology.hosts() <= 1) {
    return estimate_allreduce_us(
        algorithm == Algorithm::kHierarchical ? Algorithm::kRing : algorithm, backend, bytes,
        ranks);
  }
  const BackendCosts& c = costs_for(backend);
  const double b = static_cast<double>(bytes);
  const double n = ranks;
  const Link intra = link_or(topology.intra, Link{c.alpha_us, c.beta_us_per_byte});
  const Link cross = link_or(topology.cross, intra);
  const Link worst{std::max(intra.alpha_us, cross.alpha_us),
                   std::max(intra.beta_us_per_byte, cross.beta_us_per_byte)};
  if (algorithm == Algorithm::kNative) {
    if (!c.has_native) return -1;
    if (bytes == 0) return 0;
    double busbw = (c.native_collapse_bytes != 0 && bytes >= c.native_collapse_bytes)
                       ? c.native_collapsed_busbw_bytes_per_us
                       : c.native_busbw_bytes_per_us;
    return c.native_alpha_us + 2 * (n - 1) / n * b * std::max(1.0 / busbw, cross.beta_us_per_byte);
  }
  if (!c.has_hora_algorithms) return -1;
  if (bytes == 0) return 0;
  if (algorithm == Algorithm::kHierarchical) return hierarchical_us(c, intra, cross, b, topology);
  return flat_us(algorithm, worst, c.gamma_us_per_byte, b, n);
}

namespace {

// Calls fn(algorithm, estimated_us) for every candidate in tie-break order (see
// explain_allreduce), without allocating: select_allreduce runs once per collective.
// The calibration that applies to this selection, or null (then the table decides).
const AllreduceCalibration* calibration_for(int ranks, const std::string& backend,
                                            const Topology* topology) {
  const AllreduceCalibration* cal = topology != nullptr ? topology->calibration.get() : nullptr;
  return cal != nullptr && cal->applies_to(backend) && ranks == topology->size() ? cal : nullptr;
}

template <typename Fn>
void for_each_candidate(size_t bytes, int ranks, const std::string& backend,
                        const Topology* topology, bool calibrated, Fn&& fn) {
  const AllreduceCalibration* cal =
      calibrated ? calibration_for(ranks, backend, topology) : nullptr;
  if (cal != nullptr) {
    // Measured on this job's communicator: its candidates, in the table's tie-break order.
    for (Algorithm a : cal->algorithms) fn(a, bytes == 0 ? 0 : cal->estimate_us(a, bytes));
    return;
  }
  const bool hosts = topology != nullptr && topology->hosts() > 1;
  for (Algorithm a : {Algorithm::kRing, Algorithm::kTree, Algorithm::kRecursiveDoubling,
                      Algorithm::kNative, Algorithm::kHierarchical}) {
    if (a == Algorithm::kHierarchical && !hosts) continue;
    fn(a, hosts ? estimate_allreduce_us(a, backend, bytes, *topology)
                : estimate_allreduce_us(a, backend, bytes, ranks));
  }
}

}  // namespace

std::vector<Selection> explain_allreduce(size_t bytes, int ranks, const std::string& backend,
                                         const Topology* topology) {
  std::vector<Selection> all;
  for_each_candidate(bytes, ranks, backend, topology, true, [&](Algorithm a, double us) {
    Selection s;
    s.algorithm = a;
    s.estimated_us = us;
    all.push_back(s);
  });
  return all;
}

namespace {

// The candidate with the lowest estimate, in tie-break order (hora's own algorithms first):
// from the calibration's figures where one applies and `calibrated`, else the table's.
Selection cheapest(size_t bytes, int ranks, const std::string& backend, const Topology* topology,
                   bool calibrated) {
  Selection pick;
  bool found = false;
  for_each_candidate(bytes, ranks, backend, topology, calibrated, [&](Algorithm a, double us) {
    if (us < 0 || (found && us >= pick.estimated_us)) return;
    pick.algorithm = a;
    pick.estimated_us = us;
    found = true;
  });
  HORA_CHECK(found) << "no allreduce algorithm for backend " << backend;
  return pick;
}

}  // namespace

Algorithm table_allreduce_choice(size_t bytes, int ranks, const std::string& backend,
                                 const Topology* topology) {
  return cheapest(bytes, ranks, backend, topology, false).algorithm;
}

namespace {

Selection select_uncached(size_t bytes, int ranks, const std::string& backend, Algorithm requested,
                          const Topology* topology);

}  // namespace

Selection select_allreduce(size_t bytes, int ranks, const std::string& backend, Algorithm requested,
                           const Topology* topology) {
  const AllreduceCalibration* cal = calibration_for(ranks, backend, topology);
  if (requested == Algorithm::kAuto && cal != nullptr) {
    // A size selected before on this calibration: a few nanoseconds instead of the estimates'
    // few hundred, which would be most of an 8-byte shared-memory allreduce.
    Algorithm known;
    if (cal->cached_choice(bytes, &known)) {
      Selection s;
      s.algorithm = known;
      s.estimated_us = bytes == 0 ? 0 : cal->estimate_us(known, bytes);
      return s;
    }
  }
  const Selection s = select_uncached(bytes, ranks, backend, requested, topology);
  if (requested == Algorithm::kAuto && cal != nullptr) cal->cache_choice(bytes, s.algorithm);
  return s;
}

namespace {

Selection select_uncached(size_t bytes, int ranks, const std::string& backend, Algorithm requested,
                          const Topology* topology) {
  Selection best;
  if (requested != Algorithm::kAuto) {
    best.algorithm = requested;
    best.estimated_us = topology != nullptr
                            ? estimate_allreduce_us(requested, backend, bytes, *topology)
                            : estimate_allreduce_us(requested, backend, bytes, ranks);
    best.is_override = true;
  } else {
    best = cheapest(bytes, ranks, backend, topology, true);
    if (const AllreduceCalibration* cal = calibration_for(ranks, backend, topology)) {
      const Algorithm table = table_allreduce_choice(bytes, ranks, backend, topology);
      const double measured = bytes == 0 ? 0 : cal->estimate_us(table, bytes);
      if (table != best.algorithm && measured >= 0 &&
          measured <= best.estimated_us * kCalibratedMargin) {
        best.algorithm = table;
        best.estimated_us = measured;
      }
    }
  }
  HORA_LOG(kDebug) << "allreduce of " << bytes << " B on " << ranks << " ranks over " << backend
                   << ": " << algorithm_name(best.algorithm)
                   << (best.is_override ? " (HORA_ALLREDUCE_ALGO)"
                       : calibration_for(ranks, backend, topology) != nullptr
                           ? " (calibrated at init)"
                           : " (cost model)")
                   << ", estimated " << best.estimated_us << " us";
  return best;
}

// Auto's algorithm for `bytes` on `comm`. A size already chosen on this communicator's
// calibration: its memoised choice, without the estimate select_allreduce also returns (at 8 B
// on shared memory, the estimate and the backend name made into a string were a tenth of the
// whole call). The first choice of a size, and auto without a calibration, select; that path
// (a Selection, a log line) stays out of line, so that the memoised one sets up no frame for
// it.
__attribute__((noinline)) Algorithm select_out_of_line(Communicator& comm, size_t bytes,
                                                       const Topology* t) {
  return select_allreduce(bytes, comm.size(), comm.cost_model(), Algorithm::kAuto, t).algorithm;
}

Algorithm resolve_auto(Communicator& comm, size_t bytes, const Topology* t) {
  const AllreduceCalibration* cal = t != nullptr ? t->calibration.get() : nullptr;
  Algorithm algorithm = Algorithm::kAuto;
  if (cal != nullptr && cal->cached_choice(bytes, &algorithm) && comm.size() == t->size() &&
      cal->applies_to(comm.cost_model()))
    return algorithm;
  return select_out_of_line(comm, bytes, t);
}

}  // namespace

Status run_allreduce(Algorithm algorithm, Communicator& comm, const void* in, void* out,
                     size_t count, DataType dtype, ReduceOp op, const AlgorithmOptions& options) {
  if (op == ReduceOp::kAdasum) return adasum_allreduce(comm, in, out, count, dtype, options);
  HORA_RETURN_IF_ERROR(check_reduce_op(op, dtype, "allreduce"));
  if (algorithm == Algorithm::kAuto)
    algorithm = resolve_auto(comm, count * data_type_bytes(dtype), options.topology);
  switch (algorithm) {
    case Algorithm::kRing: return ring_allreduce(comm, in, out, count, dtype, op, options);
    case Algorithm::kTree: return tree_allreduce(comm, in, out, count, dtype, op, options);
    case Algorithm::kRecursiveDoubling:
      return recursive_doubling_allreduce(comm, in, out, count, dtype, op, options);
    case Algorithm::kHierarchical:
      if (options.topology == nullptr)
        return ring_allreduce(comm, in, out, count, dtype, op, options);
      return hierarchical_allreduce(comm, *options.topology, in, out, count, dtype, op, options);
    case Algorithm::kNative: {
      const bool scale_after = op == ReduceOp::kAverage && !comm.has_allreduce_average();
      HORA_RETURN_IF_ERROR(comm.allreduce(in, out, count, dtype, scale_after ? ReduceOp::kSum : op,
                                          options.deadline));
      if (scale_after && count > 0 && comm.size() > 1) {
        HORA_RETURN_IF_ERROR(detail::scale(comm, out, count, dtype, 1.0 / comm.size()));
      }
      return detail::finish(comm, options.deadline);
    }
    case Algorithm::kAuto: break;
  }
  return Status::internal("run_allreduce: no algorithm");
}

}  // namespace collectives
}  // namespace hora
