// Collective checks: the bodies of the correctness matrix, written against any Communicator
// so the same checks run in-process (tests/collectives/algorithms/, over InProcCommunicator)
// and multi-process (tests/mp/, over gloo, MPI or builtin under horarun).
//
// Every check is collective: every rank calls it with the same arguments. Inputs are a
// closed-form function of (rank, index), so each rank computes its expected output alone:
// integers exactly (wrap-around included), bool exactly (logical and / or over raw bytes 0, 1,
// 2 and 0x80, results 0 or 1 on more than one rank), floats within a tolerance derived from the
// dtype and the rank count against a float64 reference over the dtype-rounded inputs (min, max and
// product inputs are chosen so those results are exact). Every rank's output is also
// compared bit for bit with rank 0's (64-bit FNV-1a hashes exchanged by send/recv on
// kCheckTag). A check returns a Status naming the rank, the case and the first bad element;
// it never uses gtest macros, so it is safe on any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "collectives/communicator.h"
#include "hora/data_type.h"
#include "hora/reduce_op.h"
#include "hora/status.h"

namespace hora {
namespace test_support {

// The tag of the checks' own messages (hash exchange); keep algorithms off it.
inline constexpr uint32_t kCheckTag = 0xC4EC0001u;

// Input element i of `rank` for `op`, exactly representable in `dtype`, as a double
// (integers: the dtype's value).
double input_value(int rank, size_t i, DataType dtype, ReduceOp op);
// Writes input_value(rank, first + j) for j < count into buf.
void fill_input(void* buf, int rank, size_t first, size_t count, DataType dtype, ReduceOp op);
// Element i of buf as a double / stores v (rounded to the dtype) as element i.
double load_value(const void* buf, size_t i, DataType dtype);
void store_value(void* buf, size_t i, DataType dtype, double v);
// 64-bit FNV-1a.
uint64_t fnv1a(const void* data, size_t bytes);

// OK when every rank's `bytes` bytes at `data` are identical to rank 0's; else names the
// first differing rank. Collective.
Status check_same_bits(collectives::Communicator& comm, const void* data, size_t bytes,
                       const std::string& what, double timeout_s = 30);

struct AllreduceCase {
  size_t count = 0;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  bool in_place = false;
  std::string name() const;  // "float32/sum/1009/in_place"
};
// The matrix for one dtype on `ranks` ranks: counts {0, 1, ranks - 1, 1009} x every op
// defined on the dtype (bool: min, max, product) x
// in place / out of place, plus 1M + 3 (float32/sum only, out of place) when include_large.
std::vector<AllreduceCase> allreduce_cases(int ranks, DataType dtype, bool include_large);

using AllreduceFn = std::function<Status(collectives::Communicator&, const void* in, void* out,
                                         size_t count, DataType dtype, ReduceOp op)>;
using AllgathervFn = std::function<Status(collectives::Communicator&, const void* in, void* out,
                                          const std::vector<size_t>& counts, DataType dtype)>;
using ReducescatterFn =
    std::function<Status(collectives::Communicator&, const void* in, void* out,
                         const std::vector<size_t>& recv_counts, DataType dtype, ReduceOp op)>;
using BroadcastFn = std::function<Status(collectives::Communicator&, const void* in, void* out,
                                         size_t count, DataType dtype, int root)>;
using AlltoallvFn = std::function<Status(collectives::Communicator&, const void* in,
                                         const std::vector<size_t>& send_counts, void* out,
                                         const std::vector<size_t>& recv_counts, DataType dtype)>;

// Runs one allreduce case and checks values and bits. `repeats` > 1 reruns it on the same
// input and requires the same bits each time.
Status check_allreduce(collectives::Communicator& comm, const AllreduceFn& fn,
                       const AllreduceCase& c, int repeats = 1);
// counts[k] elements from rank k (zero allowed).
Status check_allgatherv(collectives::Communicator& comm, const AllgathervFn& fn,
                        const std::vector<size_t>& counts, DataType dtype, bool in_place);
Status check_reducescatter(collectives::Communicator& comm, const ReducescatterFn& fn,
                           const std::vector<size_t>& recv_counts, DataType dtype, ReduceOp op,
                           bool in_place);
Status check_broadcast(collectives::Communicator& comm, const BroadcastFn& fn, size_t count,
                       DataType dtype, int root, bool in_place);
// Rank r sends (r + 2p + scale) % 4 * scale elements to peer p (some blocks empty).
Status check_alltoallv(collectives::Communicator& comm, const AlltoallvFn& fn, size_t scale,
                       DataType dtype);

}  // namespace test_support
}  // namespace hora
