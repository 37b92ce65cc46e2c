#include "core/engine/tensor_queue.h"

#include <algorithm>

namespace hora {
namespace engine {

Status TensorQueue::enqueue(std::vector<Entry> entries) {
  // Names twice in the batch: sorted pointers (outside the lock; none for a single entry).
  std::vector<const Entry*> sorted;
  if (entries.size() > 1) {
    sorted.reserve(entries.size());
    for (const Entry& e : entries) sorted.push_back(&e);
    std::sort(sorted.begin(), sorted.end(),
              [](const Entry* a, const Entry* b) { return a->request.name < b->request.name; });
  }
  {
    MutexLock lock(&mu_);
    if (closed_)
      return Status(closed_why_.code(),
                    "tensor '" + (entries.empty() ? std::string() : entries[0].request.name) +
                        "': " + closed_why_.message());
    for (size_t i = 0; i < entries.size(); ++i) {
      const Entry& e = entries[i];
      const bool twice =
          i > 0 && !sorted.empty() && sorted[i]->request.name == sorted[i - 1]->request.name;
      const Entry& named = sorted.empty() ? e : *sorted[i];
      if (twice || table_.count(named.request.name) != 0)
        return Status::invalid_argument(
            "tensor '" + named.request.name + "': " + collective_name(named.request.type) +
            " enqueued while a collective of that name is still in flight on this rank "
            "(wait for its handle before reusing the name)");
    }
    // take_new() leaves fresh_ without capacity: start at the largest burst seen (bounded),
    // so a step's requests are not moved again and again as the vector grows.
    if (fresh_.empty()) fresh_.reserve(std::max(fresh_reserve_, entries.size()));
    for (Entry& e : entries) {
      fresh_.push_back(e.request);
      std::string name = e.request.name;
      table_.emplace(std::move(name), std::move(e));
    }
    fresh_reserve_ = std::min(std::max(fresh_reserve_, fresh_.size()), kMaxFreshReserve);
  }
  cv_.notify_one();
  return Status::ok();
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
  std::vector<Request> out;
  MutexLock lock(&mu_);
  out.swap(fresh_);
  burst_over_ = false;
  return out;
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
  auto it = table_.find(name);
  return it == table_.end() ? nullptr : &it->second;
}

void TensorQueue::find_all(const std::vector<Response>& responses, std::vector<Entry*>* out) {
  out->resize(responses.size());
  MutexLock lock(&mu_);
  for (size_t i = 0; i < responses.size(); ++i) {
    auto it = table_.find(responses[i].name);
    (*out)[i] = it == table_.end() ? nullptr : &it->second;
  }
}

void TensorQueue::remove(const std::string& name) {
  MutexLock lock(&mu_);
  table_.erase(name);
}

void TensorQueue::remove_all(const std::vector<Entry*>& entries) {
  MutexLock lock(&mu_);
  for (Entry* e : entries) {
    auto it = table_.find(e->request.name);  // erase(key) would read a key it destroys
    if (it != table_.end()) table_.erase(it);
  }
}

size_t TensorQueue::in_flight() const {
  MutexLock lock(&mu_);
  return table_.size();
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
  for (auto& kv : table_) left.push_back(std::move(kv.second));
  table_.clear();
  fresh_.clear();
  return left;
}

}  // namespace engine
}  // namespace hora
