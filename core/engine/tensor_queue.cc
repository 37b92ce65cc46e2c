#include "core/engine/tensor_queue.h"

#include <algorithm>
#include <utility>

namespace hora {
namespace engine {

Status TensorQueue::enqueue(std::vector<Entry>&& entries) {
  {
    MutexLock lock(&mu_);
    if (closed_)
      return Status(closed_why_.code(),
                    "tensor '" + (entries.empty() ? std::string() : entries[0].request.name) +
                        "': " + closed_why_.message());
    // Each entry goes into its name's slot with one lookup (the name interned on its first
    // enqueue); a name already in flight, or twice in the batch, undoes the batch.
    const bool batch = entries.size() > 1;
    if (batch) inserted_.clear();
    int32_t last = -1;
    for (Entry& e : entries) {
      bool added = false;
      const int32_t id = names_.intern(e.request.name, &added);
      if (static_cast<size_t>(id) >= slots_.size()) slots_.resize(static_cast<size_t>(id) + 1);
      Slot& slot = slots_[static_cast<size_t>(id)];
      if (slot.in_flight) {
        const Status dup = Status::invalid_argument(
            "tensor '" + e.request.name + "': " + collective_name(slot.entry.request.type) +
            " enqueued while a collective of that name is still in flight on this rank "
            "(wait for its handle before reusing the name)");
        if (batch) {
          for (int32_t done : inserted_) release(done);
        }
        return dup;
      }
      slot.entry = std::move(e);
      slot.entry.request.local_entry = &slot.entry;
      slot.entry.request.name_id = id;
      slot.in_flight = true;
      ++in_flight_;
      if (batch) inserted_.push_back(id);
      last = id;
    }
    // take_new() may leave fresh_ without capacity: start at the largest burst seen (bounded),
    // so a step's requests are not moved again and again as the vector grows.
    if (fresh_.empty()) fresh_.reserve(std::max(fresh_reserve_, entries.size()));
    // The round reads each request where it lies, in its entry (no copy per tensor).
    if (batch) {
      for (int32_t id : inserted_) fresh_.push_back(&slots_[static_cast<size_t>(id)].entry.request);
    } else if (last >= 0) {
      fresh_.push_back(&slots_[static_cast<size_t>(last)].entry.request);
    }
    fresh_reserve_ = std::min(std::max(fresh_reserve_, fresh_.size()), kMaxFreshReserve);
  }
  cv_.notify_one();
  return Status::ok();
}

void TensorQueue::release(int32_t id) {
  Slot& slot = slots_[static_cast<size_t>(id)];
  slot.in_flight = false;
  --in_flight_;
  slot.entry.handle.reset();
  slot.entry.allocate = nullptr;
  if (names_.size() > kMaxNames) names_.forget(id);
}

bool TensorQueue::wait_for_work(Clock::time_point until) {
  MutexLock lock(&mu_);
  while (fresh_.empty() && !shutdown_requested_ && !woken_ && Clock::now() < until)
    cv_.wait_until(mu_, until);
  const bool woken = woken_;
  woken_ = false;
  return !fresh_.empty() || shutdown_requested_ || woken;
}

void TensorQueue::wake() {
  {
    MutexLock lock(&mu_);
    woken_ = true;
  }
  cv_.notify_one();
}

std::vector<Request> TensorQueue::take_new() {
  std::vector<Request*> taken;
  take_new(&taken);
  std::vector<Request> out;
  out.reserve(taken.size());
  for (const Request* q : taken) out.push_back(*q);
  return out;
}

void TensorQueue::take_new(std::vector<Request*>* out) {
  out->clear();
  MutexLock lock(&mu_);
  out->swap(fresh_);
  burst_over_ = false;
}

bool TensorQueue::wait_in_burst(Clock::time_point until, size_t* fresh) {
  MutexLock lock(&mu_);
  while (!burst_over_ && !shutdown_requested_ && Clock::now() < until)
    burst_cv_.wait_until(mu_, until);
  *fresh = fresh_.size();
  return burst_over_ || shutdown_requested_;
}

void TensorQueue::waiting() {
  {
    MutexLock lock(&mu_);
    if (fresh_.empty() || burst_over_) return;
    burst_over_ = true;
  }
  burst_cv_.notify_one();
}

size_t TensorQueue::fresh_count() const {
  MutexLock lock(&mu_);
  return fresh_.size();
}

Entry* TensorQueue::find(const std::string& name) {
  MutexLock lock(&mu_);
  const int32_t id = names_.find(name);
  if (id < 0 || !slots_[static_cast<size_t>(id)].in_flight) return nullptr;
  return &slots_[static_cast<size_t>(id)].entry;
}

void TensorQueue::find_all(const std::vector<Response>& responses, std::vector<Entry*>* out) {
  out->resize(responses.size());
  bool lookups = false;  // a response without its entry: look it up by name
  for (size_t i = 0; i < responses.size(); ++i) {
    (*out)[i] = responses[i].local_entry;
    lookups = lookups || (*out)[i] == nullptr;
  }
  if (!lookups) return;
  MutexLock lock(&mu_);
  for (size_t i = 0; i < responses.size(); ++i) {
    if ((*out)[i] != nullptr) continue;
    const int32_t id = names_.find(responses[i].name);
    if (id >= 0 && slots_[static_cast<size_t>(id)].in_flight)
      (*out)[i] = &slots_[static_cast<size_t>(id)].entry;
  }
}

void TensorQueue::remove(const std::string& name) {
  MutexLock lock(&mu_);
  const int32_t id = names_.find(name);
  if (id >= 0 && slots_[static_cast<size_t>(id)].in_flight) release(id);
}

void TensorQueue::remove_all(const std::vector<Entry*>& entries) {
  MutexLock lock(&mu_);
  for (Entry* e : entries) {
    // By the entry's own id: no lookup by name.
    const int32_t id = e->request.name_id;
    if (id >= 0 && static_cast<size_t>(id) < slots_.size() &&
        &slots_[static_cast<size_t>(id)].entry == e && slots_[static_cast<size_t>(id)].in_flight)
      release(id);
  }
}

size_t TensorQueue::in_flight() const {
  MutexLock lock(&mu_);
  return in_flight_;
}

void TensorQueue::request_shutdown() {
  {
    MutexLock lock(&mu_);
    shutdown_requested_ = true;
  }
  cv_.notify_one();
  burst_cv_.notify_one();
}

bool TensorQueue::shutdown_requested() const {
  MutexLock lock(&mu_);
  return shutdown_requested_;
}

std::vector<Entry> TensorQueue::close(Status why) {
  std::vector<Entry> left;
  MutexLock lock(&mu_);
  closed_ = true;
  closed_why_ = std::move(why);
  for (Slot& slot : slots_) {
    if (!slot.in_flight) continue;
    left.push_back(std::move(slot.entry));
    slot.in_flight = false;
  }
  in_flight_ = 0;
  fresh_.clear();
  return left;
}

}  // namespace engine
}  // namespace hora
