#include "collectives/algorithms/ring_common.h"

#include <algorithm>
#include <array>
#include <cstring>
#include <string>

namespace hora {
namespace collectives {
namespace detail {
namespace {

int mod(int a, int n) { return ((a % n) + n) % n; }

// Walks the (step, segment) units of a phase in order; steps whose block is empty have none.
class UnitCursor {
 public:
  UnitCursor(const std::vector<int>& step_block, const std::vector<size_t>& counts,
             size_t seg_elems)
      : step_block_(step_block), counts_(counts), seg_elems_(seg_elems) {
    skip_empty();
  }
  bool done() const { return step_ >= static_cast<int>(step_block_.size()); }
  int step() const { return step_; }
  int block() const { return step_block_[step_]; }
  size_t segment() const { return segment_; }
  // Element offset within the block and element count of this unit.
  size_t elem_offset() const { return segment_ * seg_elems_; }
  size_t elems() const {
    size_t left = counts_[block()] - elem_offset();
    return left < seg_elems_ ? left : seg_elems_;
  }
  void advance() {
    ++segment_;
    skip_empty();
  }

 private:
  void skip_empty() {
    while (!done() && segment_ >= segment_count(counts_[step_block_[step_]], seg_elems_)) {
      ++step_;
      segment_ = 0;
    }
  }
  const std::vector<int>& step_block_;
  const std::vector<size_t>& counts_;
  size_t seg_elems_;
  int step_ = 0;
  size_t segment_ = 0;
};

std::string where(const char* phase, int step, int peer) {
  return std::string(" [ring ") + phase + " step " + std::to_string(step) + ", peer rank " +
         std::to_string(peer) + "]";
}

// The receives of a phase from prev: its units in order, at most kWindow in flight; unit u's
// request is recvs[u % kWindow]. DstOf(const UnitCursor& unit, size_t u) says where unit u
// lands (a scratch slot, or its place in out).
template <size_t kWindow, typename DstOf>
class RecvWindow {
 public:
  RecvWindow(Communicator& comm, int prev, size_t elem, const char* phase, uint32_t tag,
             const UnitCursor& units, DstOf dst_of)
      : comm_(comm),
        prev_(prev),
        elem_(elem),
        phase_(phase),
        tag_(tag),
        posted_(units),
        dst_of_(dst_of) {}

  // Posts units until kWindow are in flight or every unit is posted.
  Status fill() {
    while (!posted_.done() && posted_units_ < kWindow) HORA_RETURN_IF_ERROR(post_next());
    return Status::OK();
  }
  // Waits for the next unit not yet waited for, then posts the next unit into the window
  // position it freed (after the caller has read it: see release()).
  Status wait_next(Deadline deadline, int step) {
    Status status = recvs_[done_units_ % kWindow]->wait(deadline);
    if (!status.ok()) return status.with_context(where(phase_, step, prev_));
    ++done_units_;
    return Status::OK();
  }
  // The slot of the unit last waited for is free again: keep the window full.
  Status release() { return posted_.done() ? Status::OK() : post_next(); }
  // Index of the unit last waited for.
  size_t last_done() const { return done_units_ - 1; }

 private:
  Status post_next() {
    auto request =
        comm_.irecv(prev_, dst_of_(posted_, posted_units_), posted_.elems() * elem_, tag_);
    if (!request.ok()) return request.status().with_context(where(phase_, posted_.step(), prev_));
    recvs_[posted_units_ % kWindow] = std::move(request).value();
    ++posted_units_;
    posted_.advance();
    return Status::OK();
  }

  Communicator& comm_;
  const int prev_;
  const size_t elem_;
  const char* const phase_;
  const uint32_t tag_;
  UnitCursor posted_;  // the next unit to post
  DstOf dst_of_;
  size_t posted_units_ = 0;
  size_t done_units_ = 0;
  std::array<std::unique_ptr<Request>, kWindow> recvs_;
};

template <size_t kWindow, typename DstOf>
RecvWindow<kWindow, DstOf> recv_window(Communicator& comm, int prev, size_t elem, const char* phase,
                                       uint32_t tag, const UnitCursor& units, DstOf dst_of) {
  return RecvWindow<kWindow, DstOf>(comm, prev, elem, phase, tag, units, dst_of);
}

// Step 0 of both phases: sends the block of `count` elements at `block` to next, every
// segment at once (async), appending the requests to sends.
Status send_block(Communicator& comm, int next, const uint8_t* block, size_t count, size_t elem,
                  size_t seg_elems, const char* phase, uint32_t tag,
                  std::vector<std::unique_ptr<Request>>& sends) {
  for (size_t j = 0; j < segment_count(count, seg_elems); ++j) {
    const size_t off = j * seg_elems;
    const size_t elems = std::min(seg_elems, count - off);
    auto sent = comm.isend(next, block + off * elem, elems * elem, tag);
    if (!sent.ok()) return sent.status().with_context(where(phase, 0, next));
    sends.push_back(std::move(sent).value());
  }
  return Status::OK();
}

}  // namespace

std::vector<size_t> prefix_offsets(const std::vector<size_t>& counts) {
  std::vector<size_t> offsets(counts.size() + 1, 0);
  for (size_t k = 0; k < counts.size(); ++k) offsets[k + 1] = offsets[k] + counts[k];
  return offsets;
}

Status check_count_per_rank(Communicator& comm, int n, size_t counts, const char* collective,
                            const char* counts_name) {
  if (static_cast<int>(counts) == n) return Status::OK();
  return Status::invalid_argument(std::string(collective) + " on rank " +
                                  std::to_string(comm.rank()) + ": " + std::to_string(counts) +
                                  " " + counts_name + " for " + std::to_string(n) + " ranks");
}

Status wait_all(std::vector<std::unique_ptr<Request>>& requests, Deadline deadline) {
  Status first;
  for (auto& request : requests) {
    Status status = request->wait(deadline);
    if (first.ok() && !status.ok()) first = status;
  }
  requests.clear();
  return first;
}

Status send_recv(Communicator& comm, int to, const void* send_buf, size_t send_bytes, int from,
                 void* recv_buf, size_t recv_bytes, const AlgorithmOptions& options,
                 const char* collective, const char* step_word, int step) {
  auto peer = [&](const char* direction, int rank) {
    return std::string(" [") + collective + " " + step_word + " " + std::to_string(step) + ", " +
           direction + " rank " + std::to_string(rank) + "]";
  };
  auto recv = comm.irecv(from, recv_buf, recv_bytes, options.tag);
  if (!recv.ok()) return recv.status().with_context(peer("from", from));
  auto send = comm.isend(to, send_buf, send_bytes, options.tag);
  if (!send.ok()) return send.status().with_context(peer("to", to));
  Status status = recv.value()->wait(options.deadline);
  if (!status.ok()) return status.with_context(peer("from", from));
  status = send.value()->wait(options.deadline);
  if (!status.ok()) return status.with_context(peer("to", to));
  return Status::OK();
}

Status ring_reduce_scatter_phase(Communicator& comm, const ReduceScatterPhase& phase,
                                 ScratchPool& pool, const AlgorithmOptions& options) {
  const int n = comm.size();
  const int r = comm.rank();
  const int next = mod(r + 1, n);
  const int prev = mod(r - 1, n);
  const size_t elem = data_type_bytes(phase.dtype);
  const size_t seg_bytes = phase.seg_elems * elem;
  const auto& offsets = *phase.offsets;
  const auto& counts = *phase.counts;

  // Receive window: kWindow segments in flight, each into its own scratch slot.
  constexpr size_t kWindow = 4;
  HORA_ASSIGN_OR_RETURN(uint8_t * slots, acquire(comm, pool, 0, kWindow * seg_bytes));
  auto& sends = pool.requests(0);

  std::vector<int> recv_block(n - 1);
  for (int s = 0; s < n - 1; ++s) recv_block[s] = mod(r - s - 2, n);

  // Step 0: send the own input of block S_0 = r - 1, every segment at once (async).
  const int first_block = mod(r - 1, n);
  HORA_RETURN_IF_ERROR(send_block(comm, next, phase.in + offsets[first_block] * elem,
                                  counts[first_block], elem, phase.seg_elems, "reduce-scatter",
                                  options.tag, sends));

  UnitCursor current(recv_block, counts, phase.seg_elems);
  auto window = recv_window<kWindow>(
      comm, prev, elem, "reduce-scatter", options.tag, current,
      [&](const UnitCursor&, size_t u) { return slots + (u % kWindow) * seg_bytes; });
  HORA_RETURN_IF_ERROR(window.fill());
  while (!current.done()) {
    const int s = current.step();
    const int k = current.block();
    HORA_RETURN_IF_ERROR(window.wait_next(options.deadline, s));
    const size_t elem_off = offsets[k] + current.elem_offset();
    const size_t elems = current.elems();
    const bool is_final = (s == n - 2);
    uint8_t* dst = (is_final && phase.final_out != nullptr)
                       ? phase.final_out + current.elem_offset() * elem
                       : phase.work + elem_off * elem;
    Status status =
        reduce3(comm, dst, phase.in + elem_off * elem,
                slots + (window.last_done() % kWindow) * seg_bytes, elems, phase.dtype, phase.op);
    if (!status.ok()) return status.with_context(where("reduce-scatter", s, prev));
    // The slot is free again: keep the window full before sending, so the next segment's
    // transfer overlaps this one's forwarding.
    HORA_RETURN_IF_ERROR(window.release());
    if (!is_final) {
      auto sent = comm.isend(next, dst, elems * elem, options.tag);
      if (!sent.ok()) return sent.status().with_context(where("reduce-scatter", s + 1, next));
      sends.push_back(std::move(sent).value());
    }
    current.advance();
  }
  Status status = wait_all(sends, options.deadline);
  if (!status.ok()) return status.with_context(where("reduce-scatter", n - 2, next));
  return Status::OK();
}

Status ring_allgather_phase(Communicator& comm, uint8_t* out, const std::vector<size_t>& offsets,
                            const std::vector<size_t>& counts, size_t elem_bytes, size_t seg_elems,
                            ScratchPool& pool, const AlgorithmOptions& options) {
  const int n = comm.size();
  const int r = comm.rank();
  const int next = mod(r + 1, n);
  const int prev = mod(r - 1, n);

  constexpr size_t kWindow = 8;
  auto& sends = pool.requests(1);

  std::vector<int> recv_block(n - 1);
  for (int s = 0; s < n - 1; ++s) recv_block[s] = mod(r - s - 1, n);

  // Step 0: send the own block.
  HORA_RETURN_IF_ERROR(send_block(comm, next, out + offsets[r] * elem_bytes, counts[r], elem_bytes,
                                  seg_elems, "allgather", options.tag, sends));

  UnitCursor current(recv_block, counts, seg_elems);
  auto window =
      recv_window<kWindow>(comm, prev, elem_bytes, "allgather", options.tag, current,
                           [&](const UnitCursor& unit, size_t) {
                             return out + (offsets[unit.block()] + unit.elem_offset()) * elem_bytes;
                           });
  HORA_RETURN_IF_ERROR(window.fill());
  while (!current.done()) {
    const int s = current.step();
    HORA_RETURN_IF_ERROR(window.wait_next(options.deadline, s));
    HORA_RETURN_IF_ERROR(window.release());
    if (s < n - 2) {  // forward what just landed
      uint8_t* src = out + (offsets[current.block()] + current.elem_offset()) * elem_bytes;
      auto sent = comm.isend(next, src, current.elems() * elem_bytes, options.tag);
      if (!sent.ok()) return sent.status().with_context(where("allgather", s + 1, next));
      sends.push_back(std::move(sent).value());
    }
    current.advance();
  }
  Status status = wait_all(sends, options.deadline);
  if (!status.ok()) return status.with_context(where("allgather", n - 2, next));
  return Status::OK();
}

}  // namespace detail
}  // namespace collectives
}  // namespace hora
