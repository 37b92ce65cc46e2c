#include "tests/support/inproc_communicator.h"

#include <cstring>
#include <utility>

namespace hora {
namespace test_support {
namespace {

std::string rank_str(int rank) { return "rank " + std::to_string(rank); }

// A send: complete when made (eager), or failed.
class DoneRequest : public collectives::Request {
 public:
  explicit DoneRequest(Status status) : status_(std::move(status)) {}
  Status wait(Deadline) override { return status_; }

 private:
  Status status_;
};

}  // namespace

class InProcRequest : public collectives::Request {
 public:
  InProcRequest(InProcWorld* world, InProcWorld::Key key, uint64_t sequence, void* data,
                size_t bytes)
      : world_(world), key_(key), sequence_(sequence), data_(data), bytes_(bytes) {}

  Status wait(Deadline deadline) override {
    if (is_done_) return status_;
    status_ = wait_once(deadline);
    is_done_ = true;
    return status_;
  }

 private:
  Status wait_once(Deadline deadline) {
    const int src = std::get<0>(key_);
    const int dst = std::get<1>(key_);
    const uint32_t tag = std::get<2>(key_);
    {
      std::unique_lock<std::mutex> lock(world_->mu_);
      InProcWorld::RankState& me = *world_->ranks_[dst];
      InProcWorld::Stream& stream = world_->streams_[key_];
      for (;;) {
        Status own = world_->peer_failure_locked(dst);
        if (!own.ok()) {
          return Status::remote(rank_str(dst) + " cannot receive from " + rank_str(src) + ": it " +
                                own.message());
        }
        auto it = stream.messages.find(sequence_);
        if (it != stream.messages.end()) {
          InProcWorld::Message message = std::move(it->second);
          stream.messages.erase(it);
          Status status;
          if (message.bytes != bytes_) {
            status = Status::mismatch(rank_str(src) + " sent " + std::to_string(message.bytes) +
                                      " bytes on tag " + std::to_string(tag) + " but " +
                                      rank_str(dst) + " expected " + std::to_string(bytes_));
          } else if (bytes_ > 0) {
            // Rendezvous copies under the lock: the sender's request cannot withdraw (and
            // its owner free) the buffer meanwhile.
            std::memcpy(data_, message.borrowed != nullptr ? message.borrowed : message.data.data(),
                        bytes_);
          }
          if (message.send) {
            message.send->is_done = true;
            message.send->status = status;
            world_->ranks_[src]->cv.notify_all();
          }
          return status;
        }
        Status peer = world_->peer_failure_locked(src);
        if (!peer.ok()) return peer;
        if (me.cv.wait_until(lock, deadline.at()) == std::cv_status::timeout &&
            stream.messages.count(sequence_) == 0 && world_->peer_failure_locked(src).ok() &&
            world_->peer_failure_locked(dst).ok()) {
          return Status::timeout(rank_str(dst) + " timed out waiting for " + rank_str(src) +
                                 " (tag " + std::to_string(tag) + ", " + std::to_string(bytes_) +
                                 " bytes, message #" + std::to_string(sequence_) + ")");
        }
      }
    }
  }

  InProcWorld* world_;
  InProcWorld::Key key_;
  uint64_t sequence_;
  void* data_;
  size_t bytes_;
  bool is_done_ = false;
  Status status_;
};

// A rendezvous send: done when the receiver has copied the bytes.
class RendezvousSendRequest : public collectives::Request {
 public:
  RendezvousSendRequest(InProcWorld* world, InProcWorld::Key key, uint64_t sequence,
                        std::shared_ptr<InProcWorld::SendState> state, size_t bytes)
      : world_(world), key_(key), sequence_(sequence), state_(std::move(state)), bytes_(bytes) {}

  ~RendezvousSendRequest() override {
    std::lock_guard<std::mutex> lock(world_->mu_);
    if (!state_->is_done) world_->streams_[key_].messages.erase(sequence_);  // withdraw
  }

  Status wait(Deadline deadline) override {
    const int src = std::get<0>(key_);
    const int dst = std::get<1>(key_);
    std::unique_lock<std::mutex> lock(world_->mu_);
    for (;;) {
      if (state_->is_done) return state_->status;
      Status own = world_->peer_failure_locked(src);
      if (!own.ok()) {
        return Status::remote(rank_str(src) + " cannot send to " + rank_str(dst) + ": it " +
                              own.message());
      }
      Status peer = world_->peer_failure_locked(dst);
      if (!peer.ok()) return peer;
      if (world_->ranks_[src]->cv.wait_until(lock, deadline.at()) == std::cv_status::timeout &&
          !state_->is_done && world_->peer_failure_locked(src).ok() &&
          world_->peer_failure_locked(dst).ok()) {
        return Status::timeout(rank_str(src) + " timed out waiting for " + rank_str(dst) +
                               " to receive (tag " + std::to_string(std::get<2>(key_)) + ", " +
                               std::to_string(bytes_) + " bytes, message #" +
                               std::to_string(sequence_) + ")");
      }
    }
  }

 private:
  InProcWorld* world_;
  InProcWorld::Key key_;
  uint64_t sequence_;
  std::shared_ptr<InProcWorld::SendState> state_;
  size_t bytes_;
};

InProcWorld::InProcWorld(int size, SendMode mode) : size_(size), mode_(mode) {
  for (int r = 0; r < size; ++r) ranks_.push_back(std::make_unique<RankState>());
}

std::unique_ptr<InProcCommunicator> InProcWorld::communicator(int rank) {
  return std::make_unique<InProcCommunicator>(this, rank);
}

void InProcWorld::kill(int rank) {
  std::lock_guard<std::mutex> lock(mu_);
  ranks_[rank]->is_dead = true;
  wake_all_locked();
}

void InProcWorld::kill_after_ops(int rank, int64_t ops) {
  std::lock_guard<std::mutex> lock(mu_);
  ranks_[rank]->ops_until_death = ops;
  if (ops <= 0) ranks_[rank]->is_dead = true;
  wake_all_locked();
}

size_t InProcWorld::pending_messages() {
  std::lock_guard<std::mutex> lock(mu_);
  size_t total = 0;
  for (const auto& entry : streams_) total += entry.second.messages.size();
  return total;
}

void InProcWorld::count_op_locked(int rank) {
  RankState& state = *ranks_[rank];
  if (state.ops_until_death < 0) return;
  if (state.ops_until_death > 0) --state.ops_until_death;
  if (state.ops_until_death == 0 && !state.is_dead) {
    state.is_dead = true;
    wake_all_locked();
  }
}

Status InProcWorld::peer_failure_locked(int peer) const {
  const RankState& state = *ranks_[peer];
  if (state.is_dead) return Status::remote(rank_str(peer) + " is dead (killed by the test)");
  if (state.has_left) return Status::remote(rank_str(peer) + " left: " + state.left_reason);
  return Status::OK();
}

void InProcWorld::wake_all_locked() {
  for (auto& state : ranks_) state->cv.notify_all();
}

Status InProcCommunicator::check_peer(int peer, const char* what) const {
  if (peer < 0 || peer >= world_->size()) {
    return Status::invalid_argument(std::string(what) + " on rank " + std::to_string(rank_) +
                                    ": peer " + std::to_string(peer) + " is not a rank of " +
                                    std::to_string(world_->size()));
  }
  return Status::OK();
}

StatusOr<std::unique_ptr<collectives::Request>> InProcCommunicator::isend(int peer,
                                                                          const void* data,
                                                                          size_t bytes,
                                                                          uint32_t tag) {
  HORA_RETURN_IF_ERROR(check_peer(peer, "isend"));
  const bool is_eager = world_->mode_ == SendMode::kEager;
  InProcWorld::Message message;
  message.bytes = bytes;
  if (is_eager) {
    message.data.resize(bytes);
    if (bytes > 0) std::memcpy(message.data.data(), data, bytes);  // copied outside the lock
  } else {
    message.borrowed = data;
    message.send = std::make_shared<InProcWorld::SendState>();
  }
  std::shared_ptr<InProcWorld::SendState> state = message.send;
  std::lock_guard<std::mutex> lock(world_->mu_);
  world_->count_op_locked(rank_);
  Status own = world_->peer_failure_locked(rank_);
  if (!own.ok()) {
    return Status::remote(rank_str(rank_) + " cannot send to " + rank_str(peer) + ": it " +
                          own.message());
  }
  Status status = world_->peer_failure_locked(peer);
  if (!status.ok()) {
    return std::unique_ptr<collectives::Request>(std::make_unique<DoneRequest>(std::move(status)));
  }
  const InProcWorld::Key key(rank_, peer, tag);
  InProcWorld::Stream& stream = world_->streams_[key];
  const uint64_t sequence = stream.next_send++;
  stream.messages.emplace(sequence, std::move(message));
  world_->ranks_[peer]->cv.notify_all();
  if (is_eager) {
    return std::unique_ptr<collectives::Request>(std::make_unique<DoneRequest>(Status::OK()));
  }
  return std::unique_ptr<collectives::Request>(
      std::make_unique<RendezvousSendRequest>(world_, key, sequence, std::move(state), bytes));
}

StatusOr<std::unique_ptr<collectives::Request>> InProcCommunicator::irecv(int peer, void* data,
                                                                          size_t bytes,
                                                                          uint32_t tag) {
  HORA_RETURN_IF_ERROR(check_peer(peer, "irecv"));
  std::lock_guard<std::mutex> lock(world_->mu_);
  world_->count_op_locked(rank_);
  InProcWorld::Key key(peer, rank_, tag);
  const uint64_t sequence = world_->streams_[key].next_recv++;
  return std::unique_ptr<collectives::Request>(
      std::make_unique<InProcRequest>(world_, key, sequence, data, bytes));
}

void InProcCommunicator::abort() { fail(Status::remote("aborted")); }

void InProcCommunicator::fail(const Status& reason) {
  std::lock_guard<std::mutex> lock(world_->mu_);
  InProcWorld::RankState& state = *world_->ranks_[rank_];
  if (state.has_left) return;
  state.has_left = true;
  state.left_reason = reason.to_string();
  world_->wake_all_locked();
}

}  // namespace test_support
}  // namespace hora
