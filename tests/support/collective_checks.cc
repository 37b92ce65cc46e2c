#include "tests/support/collective_checks.h"

#include <cmath>
#include <cstring>
#include <limits>
#include <memory>
#include <sstream>

#include "kernels/kernels.h"

namespace hora {
namespace test_support {
namespace {

constexpr uint8_t kPoison = 0xA5;

// Integers and bool (a bool element is its raw byte here).
bool is_integer(DataType dtype) { return !is_floating(dtype); }

int64_t wrap(int64_t v, DataType dtype) {
  switch (dtype) {
    case DataType::kUint8:
    case DataType::kBool: return static_cast<uint8_t>(v);
    case DataType::kInt8: return static_cast<int8_t>(static_cast<uint8_t>(v));
    case DataType::kInt16: return static_cast<int16_t>(static_cast<uint16_t>(v));
    case DataType::kUint16: return static_cast<uint16_t>(v);
    case DataType::kInt32: return static_cast<int32_t>(static_cast<uint32_t>(v));
    default: return v;
  }
}

int64_t load_int(const void* buf, size_t i, DataType dtype) {
  switch (dtype) {
    case DataType::kUint8:
    case DataType::kBool: return static_cast<const uint8_t*>(buf)[i];
    case DataType::kInt8: return static_cast<const int8_t*>(buf)[i];
    case DataType::kInt16: return static_cast<const int16_t*>(buf)[i];
    case DataType::kUint16: return static_cast<const uint16_t*>(buf)[i];
    case DataType::kInt32: return static_cast<const int32_t*>(buf)[i];
    case DataType::kInt64: return static_cast<const int64_t*>(buf)[i];
    default: return 0;
  }
}

// bool element i of `rank`: bit `rank` of a hash of i, so that on up to 8 ranks both the and
// and the or of a block come out true for some elements and false for others. A true element
// is the byte 1, 2 or 0x80 (2 and 0x80 share no bit: a bitwise and would read them as false).
int64_t input_bool(int rank, size_t i) {
  const uint64_t bits = (static_cast<uint64_t>(i) * 2654435761ull) >> 11;
  if (((bits >> (rank % 8)) & 1) == 0) return 0;
  static const int64_t kTrue[3] = {1, 2, 0x80};
  return kTrue[(static_cast<size_t>(rank) + i) % 3];
}

int64_t input_int(int rank, size_t i, DataType dtype, ReduceOp op) {
  if (dtype == DataType::kBool) return input_bool(rank, i);
  const uint64_t k = static_cast<uint64_t>(rank) * 3 + i;
  if (op == ReduceOp::kProduct) {
    static const int64_t kSigned[4] = {-1, 1, 2, 3};
    static const int64_t kUnsigned[4] = {1, 2, 3, 1};
    const bool is_unsigned = dtype == DataType::kUint8 || dtype == DataType::kUint16;
    return is_unsigned ? kUnsigned[k % 4] : kSigned[k % 4];
  }
  // Large values, so sums wrap around for every width.
  uint64_t raw = static_cast<uint64_t>(rank) * 2654435761ull + i * 40503ull + 12345ull;
  if (dtype == DataType::kInt64) raw *= 0x9E3779B97F4A7C15ull;
  return wrap(static_cast<int64_t>(raw), dtype);
}

// Unit roundoff of the dtype's significand.
double unit_roundoff(DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16: return std::ldexp(1.0, -11);
    case DataType::kBFloat16: return std::ldexp(1.0, -8);
    case DataType::kFloat32: return std::ldexp(1.0, -24);
    default: return std::ldexp(1.0, -53);
  }
}

// The expected allreduce result at global index i on n ranks.
struct Expected {
  int64_t int_value = 0;  // integer dtypes
  double value = 0;       // float dtypes
  double tolerance = 0;
};

Expected expected_reduce(int n, size_t i, DataType dtype, ReduceOp op) {
  Expected e;
  if (is_integer(dtype)) {
    uint64_t acc = op == ReduceOp::kProduct ? 1 : 0;
    int64_t lo = std::numeric_limits<int64_t>::max();
    int64_t hi = std::numeric_limits<int64_t>::min();
    for (int r = 0; r < n; ++r) {
      int64_t v = input_int(r, i, dtype, op);
      if (op == ReduceOp::kProduct) {
        acc *= static_cast<uint64_t>(v);
      } else {
        acc += static_cast<uint64_t>(v);
      }
      lo = std::min(lo, v);
      hi = std::max(hi, v);
    }
    int64_t wrapped = wrap(static_cast<int64_t>(acc), dtype);
    if (dtype == DataType::kBool) {
      // The smallest byte is non-zero exactly when every byte is (and); the largest when any
      // is (or). Results are 0 or 1, except on one rank, where nothing is combined and the
      // byte is copied as it is. Sum and average are not defined on bool.
      if (n == 1)
        e.int_value = lo;
      else
        e.int_value = op == ReduceOp::kMax ? (hi != 0) : (lo != 0);
      return e;
    }
    switch (op) {
      case ReduceOp::kMin: e.int_value = lo; break;
      case ReduceOp::kMax: e.int_value = hi; break;
      case ReduceOp::kAverage:
        // As kernels::scale: float64 multiply, llround, wrap. One rank: no scaling at all.
        e.int_value =
            n == 1 ? wrapped : wrap(std::llround(static_cast<double>(wrapped) * (1.0 / n)), dtype);
        break;
      default: e.int_value = wrapped; break;
    }
    return e;
  }
  double sum = 0, abs_sum = 0, product = 1;
  double lo = std::numeric_limits<double>::infinity();
  double hi = -lo;
  for (int r = 0; r < n; ++r) {
    double v = input_value(r, i, dtype, op);
    sum += v;
    abs_sum += std::fabs(v);
    product *= v;
    lo = std::min(lo, v);
    hi = std::max(hi, v);
  }
  const double u = unit_roundoff(dtype);
  switch (op) {
    case ReduceOp::kSum:
      e.value = sum;
      e.tolerance = (n + 1) * u * abs_sum;
      break;
    case ReduceOp::kAverage:
      e.value = sum / n;
      e.tolerance = (n + 1) * u * abs_sum / n + 2 * u * std::fabs(sum / n);
      break;
    case ReduceOp::kMin: e.value = lo; break;
    case ReduceOp::kMax: e.value = hi; break;
    case ReduceOp::kProduct: e.value = product; break;  // powers of two: exact
    case ReduceOp::kAdasum: break;  // not elementwise: no case of these checks uses it
  }
  return e;
}

std::string rank_prefix(const collectives::Communicator& comm) {
  return "rank " + std::to_string(comm.rank()) + " of " + std::to_string(comm.size()) + ": ";
}

// Checks count elements of `got` against expected_reduce at global indices first + j.
Status check_reduced(const collectives::Communicator& comm, const void* got, size_t first,
                     size_t count, DataType dtype, ReduceOp op, const std::string& what) {
  const int n = comm.size();
  for (size_t j = 0; j < count; ++j) {
    Expected e = expected_reduce(n, first + j, dtype, op);
    if (is_integer(dtype)) {
      int64_t value = load_int(got, j, dtype);
      if (value != e.int_value) {
        return Status::internal(rank_prefix(comm) + what + ": element " + std::to_string(j) +
                                " is " + std::to_string(value) + ", expected " +
                                std::to_string(e.int_value));
      }
    } else {
      double value = load_value(got, j, dtype);
      if (!(std::fabs(value - e.value) <= e.tolerance)) {
        std::ostringstream msg;
        msg.precision(17);
        msg << rank_prefix(comm) << what << ": element " << j << " is " << value << ", expected "
            << e.value << " within " << e.tolerance;
        return Status::internal(msg.str());
      }
    }
  }
  return Status::OK();
}

// Compares bytes to an expected buffer, naming the first differing element.
Status check_exact(const collectives::Communicator& comm, const uint8_t* got, const uint8_t* want,
                   size_t count, DataType dtype, const std::string& what) {
  const size_t elem = data_type_bytes(dtype);
  for (size_t j = 0; j < count; ++j) {
    if (std::memcmp(got + j * elem, want + j * elem, elem) != 0) {
      return Status::internal(rank_prefix(comm) + what + ": element " + std::to_string(j) + " is " +
                              std::to_string(load_value(got, j, dtype)) + ", expected " +
                              std::to_string(load_value(want, j, dtype)));
    }
  }
  return Status::OK();
}

std::vector<size_t> offsets_of(const std::vector<size_t>& counts) {
  std::vector<size_t> offsets(counts.size() + 1, 0);
  for (size_t k = 0; k < counts.size(); ++k) offsets[k + 1] = offsets[k] + counts[k];
  return offsets;
}

}  // namespace

double input_value(int rank, size_t i, DataType dtype, ReduceOp op) {
  if (is_integer(dtype)) return static_cast<double>(input_int(rank, i, dtype, op));
  double raw;
  if (op == ReduceOp::kProduct) {
    static const double kValues[4] = {0.5, 1.0, 2.0, -1.0};
    raw = kValues[(static_cast<size_t>(rank) * 3 + i) % 4];
  } else {
    // Fractions that no dtype holds exactly, so sums round and their order shows in the bits.
    raw = (static_cast<double>((static_cast<size_t>(rank) * 37 + i * 101) % 257) - 128) / 16.0 +
          static_cast<double>((static_cast<size_t>(rank) * 104729 + i * 7919) % 1000) * 1e-4;
  }
  uint8_t bytes[8];
  store_value(bytes, 0, dtype, raw);
  return load_value(bytes, 0, dtype);
}

void fill_input(void* buf, int rank, size_t first, size_t count, DataType dtype, ReduceOp op) {
  for (size_t j = 0; j < count; ++j) {
    if (is_integer(dtype)) {
      int64_t v = input_int(rank, first + j, dtype, op);
      switch (dtype) {
        case DataType::kUint8:
        case DataType::kBool: static_cast<uint8_t*>(buf)[j] = static_cast<uint8_t>(v); break;
        case DataType::kInt8: static_cast<int8_t*>(buf)[j] = static_cast<int8_t>(v); break;
        case DataType::kInt16: static_cast<int16_t*>(buf)[j] = static_cast<int16_t>(v); break;
        case DataType::kUint16: static_cast<uint16_t*>(buf)[j] = static_cast<uint16_t>(v); break;
        case DataType::kInt32: static_cast<int32_t*>(buf)[j] = static_cast<int32_t>(v); break;
        default: static_cast<int64_t*>(buf)[j] = v; break;
      }
    } else {
      store_value(buf, j, dtype, input_value(rank, first + j, dtype, op));
    }
  }
}

double load_value(const void* buf, size_t i, DataType dtype) {
  switch (dtype) {
    case DataType::kFloat16: return kernels::f16_to_f32(static_cast<const uint16_t*>(buf)[i]);
    case DataType::kBFloat16: return kernels::bf16_to_f32(static_cast<const uint16_t*>(buf)[i]);
    case DataType::kFloat32: return static_cast<const float*>(buf)[i];
    case DataType::kFloat64: return static_cast<const double*>(buf)[i];
    default: return static_cast<double>(load_int(buf, i, dtype));
  }
}

void store_value(void* buf, size_t i, DataType dtype, double v) {
  switch (dtype) {
    case DataType::kFloat16:
      static_cast<uint16_t*>(buf)[i] = kernels::f32_to_f16(static_cast<float>(v));
      break;
    case DataType::kBFloat16:
      static_cast<uint16_t*>(buf)[i] = kernels::f32_to_bf16(static_cast<float>(v));
      break;
    case DataType::kFloat32: static_cast<float*>(buf)[i] = static_cast<float>(v); break;
    case DataType::kFloat64: static_cast<double*>(buf)[i] = v; break;
    case DataType::kUint8:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(wrap(static_cast<int64_t>(v), dtype));
      break;
    case DataType::kInt8:
      static_cast<int8_t*>(buf)[i] = static_cast<int8_t>(wrap(static_cast<int64_t>(v), dtype));
      break;
    case DataType::kInt32:
      static_cast<int32_t*>(buf)[i] = static_cast<int32_t>(wrap(static_cast<int64_t>(v), dtype));
      break;
    case DataType::kInt64: static_cast<int64_t*>(buf)[i] = static_cast<int64_t>(v); break;
    case DataType::kInt16:
      static_cast<int16_t*>(buf)[i] = static_cast<int16_t>(wrap(static_cast<int64_t>(v), dtype));
      break;
    case DataType::kUint16:
      static_cast<uint16_t*>(buf)[i] = static_cast<uint16_t>(wrap(static_cast<int64_t>(v), dtype));
      break;
    case DataType::kBool:
      static_cast<uint8_t*>(buf)[i] = static_cast<uint8_t>(wrap(static_cast<int64_t>(v), dtype));
      break;
  }
}

uint64_t fnv1a(const void* data, size_t bytes) {
  uint64_t hash = 1469598103934665603ull;
  const auto* p = static_cast<const uint8_t*>(data);
  for (size_t i = 0; i < bytes; ++i) {
    hash ^= p[i];
    hash *= 1099511628211ull;
  }
  return hash;
}

Status check_same_bits(collectives::Communicator& comm, const void* data, size_t bytes,
                       const std::string& what, double timeout_s) {
  const int n = comm.size();
  const int me = comm.rank();
  if (n == 1) return Status::OK();
  const Deadline deadline = Deadline::after_seconds(timeout_s);
  std::vector<uint64_t> hashes(n, 0);
  hashes[me] = fnv1a(data, bytes);
  std::vector<std::unique_ptr<collectives::Request>> requests;
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    HORA_ASSIGN_OR_RETURN(auto recv, comm.irecv(p, &hashes[p], sizeof(uint64_t), kCheckTag));
    requests.push_back(std::move(recv));
  }
  for (int p = 0; p < n; ++p) {
    if (p == me) continue;
    HORA_ASSIGN_OR_RETURN(auto send, comm.isend(p, &hashes[me], sizeof(uint64_t), kCheckTag));
    requests.push_back(std::move(send));
  }
  for (auto& request : requests) HORA_RETURN_IF_ERROR(request->wait(deadline));
  for (int p = 1; p < n; ++p) {
    if (hashes[p] != hashes[0]) {
      return Status::internal(rank_prefix(comm) + what + ": rank " + std::to_string(p) +
                              "'s bits differ from rank 0's (hash " + std::to_string(hashes[p]) +
                              " vs " + std::to_string(hashes[0]) + ")");
    }
  }
  return Status::OK();
}

std::string AllreduceCase::name() const {
  return std::string(data_type_name(dtype)) + "/" + reduce_op_name(op) + "/" +
         std::to_string(count) + (in_place ? "/in_place" : "/out_of_place");
}

std::vector<AllreduceCase> allreduce_cases(int ranks, DataType dtype, bool include_large) {
  std::vector<size_t> counts = {0, 1};
  if (ranks - 1 > 1) counts.push_back(ranks - 1);
  counts.push_back(1009);
  std::vector<AllreduceCase> cases;
  for (size_t count : counts) {
    for (int op = 0; op < kNumElementwiseReduceOps; ++op) {
      if (!is_reduce_op_defined(static_cast<ReduceOp>(op), dtype)) continue;
      for (bool in_place : {false, true}) {
        AllreduceCase c;
        c.count = count;
        c.dtype = dtype;
        c.op = static_cast<ReduceOp>(op);
        c.in_place = in_place;
        cases.push_back(c);
      }
    }
  }
  if (include_large && dtype == DataType::kFloat32) {
    AllreduceCase c;
    c.count = (1u << 20) + 3;
    c.dtype = dtype;
    c.op = ReduceOp::kSum;
    cases.push_back(c);
  }
  return cases;
}

Status check_allreduce(collectives::Communicator& comm, const AllreduceFn& fn,
                       const AllreduceCase& c, int repeats) {
  const std::string what = "allreduce " + c.name();
  const size_t bytes = c.count * data_type_bytes(c.dtype);
  std::vector<uint8_t> input(bytes), buf(bytes);
  fill_input(input.data(), comm.rank(), 0, c.count, c.dtype, c.op);
  uint64_t first_hash = 0;
  for (int rep = 0; rep < repeats; ++rep) {
    std::vector<uint8_t> in_copy = input;
    if (c.in_place) {
      Status status = fn(comm, in_copy.data(), in_copy.data(), c.count, c.dtype, c.op);
      if (!status.ok()) return status.with_context(" [" + what + "]");
      buf.swap(in_copy);
    } else {
      if (bytes > 0) std::memset(buf.data(), kPoison, bytes);  // data() may be null at 0
      Status status = fn(comm, in_copy.data(), buf.data(), c.count, c.dtype, c.op);
      if (!status.ok()) return status.with_context(" [" + what + "]");
      if (in_copy != input) {
        return Status::internal(rank_prefix(comm) + what + ": the input changed out of place");
      }
    }
    if (rep == 0) {
      HORA_RETURN_IF_ERROR(check_reduced(comm, buf.data(), 0, c.count, c.dtype, c.op, what));
      first_hash = fnv1a(buf.data(), bytes);
    } else if (fnv1a(buf.data(), bytes) != first_hash) {
      return Status::internal(rank_prefix(comm) + what + ": run " + std::to_string(rep) +
                              " gave other bits than run 0");
    }
    HORA_RETURN_IF_ERROR(check_same_bits(comm, buf.data(), bytes, what));
  }
  return Status::OK();
}

Status check_allgatherv(collectives::Communicator& comm, const AllgathervFn& fn,
                        const std::vector<size_t>& counts, DataType dtype, bool in_place) {
  const int me = comm.rank();
  const size_t elem = data_type_bytes(dtype);
  const std::vector<size_t> offsets = offsets_of(counts);
  const size_t total = offsets.back();
  std::string what = std::string("allgatherv ") + data_type_name(dtype) + " total " +
                     std::to_string(total) + (in_place ? " in place" : " out of place");
  std::vector<uint8_t> want(total * elem), out(total * elem, kPoison), in(counts[me] * elem);
  for (size_t k = 0; k < counts.size(); ++k) {
    fill_input(want.data() + offsets[k] * elem, static_cast<int>(k), 0, counts[k], dtype,
               ReduceOp::kSum);
  }
  fill_input(in.data(), me, 0, counts[me], dtype, ReduceOp::kSum);
  const void* src = in.data();
  if (in_place) {
    if (!in.empty()) std::memcpy(out.data() + offsets[me] * elem, in.data(), in.size());
    src = out.data() + offsets[me] * elem;
  }
  Status status = fn(comm, src, out.data(), counts, dtype);
  if (!status.ok()) return status.with_context(" [" + what + "]");
  return check_exact(comm, out.data(), want.data(), total, dtype, what);
}

Status check_reducescatter(collectives::Communicator& comm, const ReducescatterFn& fn,
                           const std::vector<size_t>& recv_counts, DataType dtype, ReduceOp op,
                           bool in_place) {
  const int me = comm.rank();
  const size_t elem = data_type_bytes(dtype);
  const std::vector<size_t> offsets = offsets_of(recv_counts);
  const size_t total = offsets.back();
  std::string what = std::string("reducescatter ") + data_type_name(dtype) + "/" +
                     reduce_op_name(op) + " total " + std::to_string(total) +
                     (in_place ? " in place" : " out of place");
  std::vector<uint8_t> in(total * elem), out(recv_counts[me] * elem, kPoison);
  fill_input(in.data(), me, 0, total, dtype, op);
  uint8_t* dst = in_place ? in.data() + offsets[me] * elem : out.data();
  Status status = fn(comm, in.data(), dst, recv_counts, dtype, op);
  if (!status.ok()) return status.with_context(" [" + what + "]");
  return check_reduced(comm, dst, offsets[me], recv_counts[me], dtype, op, what);
}

Status check_broadcast(collectives::Communicator& comm, const BroadcastFn& fn, size_t count,
                       DataType dtype, int root, bool in_place) {
  const size_t bytes = count * data_type_bytes(dtype);
  std::string what = std::string("broadcast ") + data_type_name(dtype) + " " +
                     std::to_string(count) + " from root " + std::to_string(root) +
                     (in_place ? " in place" : " out of place");
  std::vector<uint8_t> want(bytes), in(bytes, kPoison), out(bytes, kPoison);
  fill_input(want.data(), root, 0, count, dtype, ReduceOp::kSum);
  if (comm.rank() == root) in = want;
  Status status;
  if (in_place) {
    if (comm.rank() == root) out = want;
    status = fn(comm, out.data(), out.data(), count, dtype, root);
  } else {
    status = fn(comm, in.data(), out.data(), count, dtype, root);
  }
  if (!status.ok()) return status.with_context(" [" + what + "]");
  return check_exact(comm, out.data(), want.data(), count, dtype, what);
}

Status check_alltoallv(collectives::Communicator& comm, const AlltoallvFn& fn, size_t scale,
                       DataType dtype) {
  const int n = comm.size();
  const int me = comm.rank();
  const size_t elem = data_type_bytes(dtype);
  auto count_from_to = [&](int from, int to) {
    return static_cast<size_t>((from + 2 * to + 1) % 4) * scale;
  };
  std::vector<size_t> send_counts(n), recv_counts(n);
  for (int p = 0; p < n; ++p) {
    send_counts[p] = count_from_to(me, p);
    recv_counts[p] = count_from_to(p, me);
  }
  const std::vector<size_t> send_offsets = offsets_of(send_counts);
  const std::vector<size_t> recv_offsets = offsets_of(recv_counts);
  std::vector<uint8_t> in(send_offsets.back() * elem), out(recv_offsets.back() * elem, kPoison),
      want(recv_offsets.back() * elem);
  for (int p = 0; p < n; ++p) {
    fill_input(in.data() + send_offsets[p] * elem, me * n + p, 0, send_counts[p], dtype,
               ReduceOp::kSum);
    fill_input(want.data() + recv_offsets[p] * elem, p * n + me, 0, recv_counts[p], dtype,
               ReduceOp::kSum);
  }
  std::string what =
      std::string("alltoallv ") + data_type_name(dtype) + " scale " + std::to_string(scale);
  Status status = fn(comm, in.data(), send_counts, out.data(), recv_counts, dtype);
  if (!status.ok()) return status.with_context(" [" + what + "]");
  return check_exact(comm, out.data(), want.data(), recv_offsets.back(), dtype, what);
}

}  // namespace test_support
}  // namespace hora
