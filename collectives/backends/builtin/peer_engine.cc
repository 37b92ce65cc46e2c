#include "collectives/backends/builtin/peer_engine.h"

#include <algorithm>
#include <cstring>
#include <string>

namespace hora {
namespace collectives {
namespace builtin {
namespace {

// Bytes moved per direction per progress() call, so that one big transfer cannot starve the
// other direction or the other peers.
constexpr size_t kBudget = size_t{1} << 20;

}  // namespace

PeerEngine::PeerEngine(int rank, int peer, std::unique_ptr<ByteLink> link,
                       uint64_t max_message_bytes)
    : rank_(rank), peer_(peer), link_(std::move(link)), max_message_bytes_(max_message_bytes) {}

void PeerEngine::complete(const std::shared_ptr<Op>& op, Status status) {
  op->status = std::move(status);
  op->complete = true;
}

Status PeerEngine::mismatch(uint32_t tag, uint64_t sent, size_t posted) const {
  return Status::mismatch("rank " + std::to_string(peer_) + " sent " + std::to_string(sent) +
                          " bytes with tag " + std::to_string(tag) + ", but rank " +
                          std::to_string(rank_) + " posted a recv of " + std::to_string(posted) +
                          " bytes for it");
}

void PeerEngine::post_send(const std::shared_ptr<Op>& op) {
  if (broken()) return complete(op, broken_);
  FrameHeader h;
  h.tag = op->tag;
  h.bytes = op->bytes;
  encode_frame_header(h, op->header);
  sends_.push_back(op);
}

void PeerEngine::post_recv(const std::shared_ptr<Op>& op) {
  // Messages that arrived whole before the link broke can still be received.
  for (auto it = unexpected_.begin(); it != unexpected_.end(); ++it) {
    if (it->tag != op->tag || it->waiter) continue;
    bool arrived =
        it->done == it->data.size() &&
        !(into_unexpected_ && it == receiving_unexpected_ && rx_state_ == RxState::kPayload);
    if (!arrived) {
      it->waiter = op;
      ++waiters_;
      return;
    }
    deliver(*it, op);
    unexpected_.erase(it);
    return;
  }
  if (broken()) return complete(op, broken_);
  recvs_.push_back(op);
}

void PeerEngine::finish_unexpected(std::list<Unexpected>::iterator it) {
  if (!it->waiter) return;  // stays until a recv claims it
  std::shared_ptr<Op> op = std::move(it->waiter);
  --waiters_;
  deliver(*it, op);
  unexpected_.erase(it);
}

void PeerEngine::deliver(const Unexpected& message, const std::shared_ptr<Op>& op) {
  if (message.data.size() != op->bytes) {
    complete(op, mismatch(message.tag, message.data.size(), op->bytes));
    return;
  }
  if (op->bytes > 0) std::memcpy(op->dst, message.data.data(), op->bytes);
  op->done = op->bytes;
  complete(op, Status::OK());
}

void PeerEngine::fail(const Status& status) {
  if (broken_.ok()) broken_ = status;
  for (auto& op : sends_) complete(op, broken_);
  for (auto& op : recvs_) complete(op, broken_);
  sends_.clear();
  recvs_.clear();
  if (receiving_op_) complete(receiving_op_, broken_);
  receiving_op_.reset();
  // Keep the messages that arrived whole and nobody claimed yet; drop the partial one.
  for (auto it = unexpected_.begin(); it != unexpected_.end();) {
    bool partial = into_unexpected_ && it == receiving_unexpected_;
    if (it->waiter) complete(it->waiter, broken_);
    if (it->waiter || partial)
      it = unexpected_.erase(it);
    else
      ++it;
  }
  waiters_ = 0;
  into_unexpected_ = false;
  rx_state_ = RxState::kHeader;
}

bool PeerEngine::progress(bool allow_unexpected) {
  if (broken()) return false;
  bool moved = progress_send();
  if (broken()) return true;
  return progress_recv(allow_unexpected) || moved;
}

bool PeerEngine::progress_send() {
  bool moved = false;
  size_t budget = kBudget;
  while (!sends_.empty() && budget > 0) {
    Op& op = *sends_.front();
    ConstSpan spans[2];
    int count = 0;
    if (op.done < kFrameHeaderBytes) {
      spans[count++] = {op.header + op.done, kFrameHeaderBytes - op.done};
      spans[count++] = {op.src, op.bytes};
    } else {
      size_t sent = op.done - kFrameHeaderBytes;
      spans[count++] = {op.src + sent, op.bytes - sent};
    }
    auto n = link_->write_some(spans, count);
    if (!n.ok()) {
      fail(n.status());
      return true;
    }
    if (n.value() == 0) break;
    moved = true;
    op.done += n.value();
    budget -= std::min(budget, n.value());
    if (op.done == kFrameHeaderBytes + op.bytes) {
      complete(sends_.front(), Status::OK());
      sends_.pop_front();
    }
  }
  return moved;
}

bool PeerEngine::progress_recv(bool allow_unexpected) {
  bool moved = false;
  size_t budget = kBudget;
  while (budget > 0) {
    RxStep step = RxStep::kGoOn;
    switch (rx_state_) {
      case RxState::kHeader: step = recv_header(&moved); break;
      case RxState::kMatch: step = match_frame(allow_unexpected, &moved); break;
      case RxState::kPayload: step = recv_payload(&budget, &moved); break;
      case RxState::kDiscard: step = discard_payload(&budget, &moved); break;
    }
    if (step == RxStep::kBroken) return true;
    if (step == RxStep::kIdle) return moved;
  }
  return moved;
}

// Reads up to `want` bytes into dst: *got of them (kGoOn), none yet (kIdle), or a failed link.
PeerEngine::RxStep PeerEngine::read_bytes(uint8_t* dst, size_t want, size_t* got) {
  auto n = link_->read_some(dst, want);
  if (!n.ok()) {
    fail(n.status());
    return RxStep::kBroken;
  }
  if (n.value() == 0) return RxStep::kIdle;
  *got = n.value();
  return RxStep::kGoOn;
}

// kHeader: reads the frame header and parses it (kMatch next).
PeerEngine::RxStep PeerEngine::recv_header(bool* moved) {
  size_t got = 0;
  const RxStep step =
      read_bytes(rx_header_ + rx_header_got_, kFrameHeaderBytes - rx_header_got_, &got);
  if (step != RxStep::kGoOn) return step;
  *moved = true;
  rx_header_got_ += got;
  if (rx_header_got_ < kFrameHeaderBytes) return RxStep::kGoOn;
  rx_header_got_ = 0;
  auto parsed = parse_frame_header(rx_header_, max_message_bytes_, peer_);
  if (!parsed.ok()) {
    fail(parsed.status());
    return RxStep::kBroken;
  }
  rx_frame_ = parsed.value();
  rx_state_ = RxState::kMatch;
  return RxStep::kGoOn;
}

// kMatch: the frame goes to the first posted recv of its tag (kDiscard when its size is not
// the recv's: the recv fails), else to a new unexpected entry when allowed (kPayload).
PeerEngine::RxStep PeerEngine::match_frame(bool allow_unexpected, bool* moved) {
  auto it = std::find_if(recvs_.begin(), recvs_.end(),
                         [&](const std::shared_ptr<Op>& op) { return op->tag == rx_frame_.tag; });
  rx_done_ = 0;
  if (it != recvs_.end()) {
    std::shared_ptr<Op> op = *it;
    recvs_.erase(it);
    *moved = true;
    if (op->bytes != rx_frame_.bytes) {
      complete(op, mismatch(rx_frame_.tag, rx_frame_.bytes, op->bytes));
      rx_state_ = RxState::kDiscard;
      return RxStep::kGoOn;
    }
    receiving_op_ = std::move(op);
    into_unexpected_ = false;
  } else if (allow_unexpected) {
    *moved = true;
    unexpected_.push_back(
        Unexpected{rx_frame_.tag, std::vector<uint8_t>(rx_frame_.bytes), 0, nullptr});
    receiving_unexpected_ = std::prev(unexpected_.end());
    into_unexpected_ = true;
  } else {
    return RxStep::kIdle;
  }
  rx_state_ = RxState::kPayload;
  return RxStep::kGoOn;
}

// kPayload: reads the payload into the recv or the unexpected entry, completes it at the end
// (kHeader next).
PeerEngine::RxStep PeerEngine::recv_payload(size_t* budget, bool* moved) {
  uint8_t* dst = into_unexpected_ ? receiving_unexpected_->data.data() : receiving_op_->dst;
  const uint64_t total = rx_frame_.bytes;
  if (rx_done_ < total) {
    size_t got = 0;
    const size_t want = static_cast<size_t>(std::min<uint64_t>(total - rx_done_, *budget));
    const RxStep step = read_bytes(dst + rx_done_, want, &got);
    if (step != RxStep::kGoOn) return step;
    *moved = true;
    rx_done_ += got;
    *budget -= std::min(*budget, got);
    if (into_unexpected_)
      receiving_unexpected_->done = rx_done_;
    else
      receiving_op_->done = rx_done_;
  }
  if (rx_done_ < total) return RxStep::kGoOn;
  *moved = true;
  rx_state_ = RxState::kHeader;
  if (into_unexpected_) {
    into_unexpected_ = false;
    finish_unexpected(receiving_unexpected_);
  } else {
    complete(receiving_op_, Status::OK());
    receiving_op_.reset();
  }
  return RxStep::kGoOn;
}

// kDiscard: reads and drops the payload of a frame whose recv failed (kHeader next).
PeerEngine::RxStep PeerEngine::discard_payload(size_t* budget, bool* moved) {
  if (discard_.empty()) discard_.resize(64 << 10);
  if (rx_done_ < rx_frame_.bytes) {
    size_t got = 0;
    const size_t want =
        static_cast<size_t>(std::min<uint64_t>(rx_frame_.bytes - rx_done_, discard_.size()));
    const RxStep step = read_bytes(discard_.data(), want, &got);
    if (step != RxStep::kGoOn) return step;
    *moved = true;
    rx_done_ += got;
    *budget -= std::min(*budget, got);
  }
  if (rx_done_ == rx_frame_.bytes) rx_state_ = RxState::kHeader;
  return RxStep::kGoOn;
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
