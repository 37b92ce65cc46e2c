// Internal to collectives/algorithms/: the two ring phases shared by ring allreduce, ring
// reducescatter and ring allgatherv, and small helpers every algorithm uses. Not a public
// interface; see algorithms.h for the contracts.
//
// Ring words used by every file here: n ranks, rank r sends to next = (r + 1) % n and receives
// from prev = (r - 1 + n) % n. The buffer is split into n blocks (block k: offsets[k],
// counts[k] elements); each block into segments of seg_elems elements (the last one shorter),
// and one segment is one message. A step moves one block around the ring by one hop.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

#include "collectives/algorithms/algorithms.h"
#include "collectives/algorithms/buffer_access.h"

namespace hora {
namespace collectives {
namespace detail {

// Number of segments of a block of `count` elements.
inline size_t segment_count(size_t count, size_t seg_elems) {
  return (count + seg_elems - 1) / seg_elems;
}
// Prefix sums of counts: offsets[k] = sum of counts[0..k).
std::vector<size_t> prefix_offsets(const std::vector<size_t>& counts);
// OK when there is one count per rank (`counts` == n == comm.size()); otherwise kInvalidArgument
// "<collective> on rank r: <counts> <counts_name> for n ranks".
Status check_count_per_rank(Communicator& comm, int n, size_t counts, const char* collective,
                            const char* counts_name);
// Waits every request of the list (in order), then clears it. Returns the first failure.
Status wait_all(std::vector<std::unique_ptr<Request>>& requests, Deadline deadline);

// Receives recv_bytes from `from` into recv_buf while sending send_bytes of send_buf to `to`:
// the receive is posted first (safe with rendezvous transports), then both are waited for.
// A failure names the step and the peer: " [<collective> <step_word> <step>, from rank F]"
// (or ", to rank T"); the message is built only then.
Status send_recv(Communicator& comm, int to, const void* send_buf, size_t send_bytes, int from,
                 void* recv_buf, size_t recv_bytes, const AlgorithmOptions& options,
                 const char* collective, const char* step_word, int step);

// Reduce-scatter phase, n - 1 steps. At step s rank r receives block R_s = (r - s - 2) mod n
// from prev, one segment at a time into a window of scratch slots, and reduces it with its
// own input: result = in_block op received. The result of step s is what it sends at step
// s + 1 (S_{s+1} = R_s); step 0 sends its own input of block (r - 1) mod n. So block k is
// reduced in the fixed order x_k, then x_{k+1}, ..., ending at rank k, which after the last
// step holds the full reduction of block r == its own index.
// Results go to work + offsets[k] (work spans the whole buffer), except the final block r,
// which goes to final_out when it is non-null (reducescatter: only block r is output).
struct ReduceScatterPhase {
  const uint8_t* in = nullptr;
  uint8_t* work = nullptr;
  uint8_t* final_out = nullptr;
  const std::vector<size_t>* offsets = nullptr;
  const std::vector<size_t>* counts = nullptr;
  DataType dtype = DataType::kFloat32;
  ReduceOp op = ReduceOp::kSum;
  size_t seg_elems = 1;
};
Status ring_reduce_scatter_phase(Communicator& comm, const ReduceScatterPhase& phase,
                                 ScratchPool& pool, const AlgorithmOptions& options);

// Allgather phase, n - 1 steps, in place on `out` (spans the whole buffer, rank r's block
// already in place). At step s rank r sends block (r - s) mod n and receives block
// (r - s - 1) mod n straight into out; a segment received at step s is forwarded at step
// s + 1 as soon as it lands, so segments pipeline along the ring.
Status ring_allgather_phase(Communicator& comm, uint8_t* out, const std::vector<size_t>& offsets,
                            const std::vector<size_t>& counts, size_t elem_bytes, size_t seg_elems,
                            ScratchPool& pool, const AlgorithmOptions& options);

}  // namespace detail
}  // namespace collectives
}  // namespace hora
