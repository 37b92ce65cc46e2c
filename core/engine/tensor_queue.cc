#include "core/engine/tensor_queue.h"

#include <algorithm>
#include <tuple>
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
    // Each entry goes into the table with one lookup (in a node removed earlier when there is
    // one: no allocation); a name already in flight, or twice in the batch, undoes the batch.
    const bool batch = entries.size() > 1;
    if (batch) inserted_.clear();
    Table::iterator last = table_.end();
    for (Entry& e : entries) {
      Table::iterator it;
      bool is_new;
      if (spare_.empty()) {
        std::tie(it, is_new) = table_.try_emplace(e.request.name, std::move(e));
      } else {
        Table::node_type node = std::move(spare_.back());
        spare_.pop_back();
        node.key() = e.request.name;
        node.mapped() = std::move(e);
        Table::insert_return_type r = table_.insert(std::move(node));
        std::tie(it, is_new) = std::make_pair(r.position, r.inserted);
        if (!is_new) recycle(std::move(r.node));
      }
      if (!is_new) {
        const Status dup = Status::invalid_argument(
            "tensor '" + it->first + "': " + collective_name(it->second.request.type) +
            " enqueued while a collective of that name is still in flight on this rank "
            "(wait for its handle before reusing the name)");
        if (batch) {
          for (Table::iterator done : inserted_) recycle(table_.extract(done));
        }
        return dup;
      }
      it->second.request.local_entry = &it->second;
      if (batch) inserted_.push_back(it);
      last = it;
    }
    // take_new() may leave fresh_ without capacity: start at the largest burst seen (bounded),
    // so a step's requests are not moved again and again as the vector grows.
    if (fresh_.empty()) fresh_.reserve(std::max(fresh_reserve_, entries.size()));
    if (batch) {
      for (Table::iterator it : inserted_) fresh_.push_back(it->second.request);
    } else if (last != table_.end()) {
      fresh_.push_back(last->second.request);
    }
    fresh_reserve_ = std::min(std::max(fresh_reserve_, fresh_.size()), kMaxFreshReserve);
  }
  cv_.notify_one();
  return Status::ok();
}

void TensorQueue::recycle(Table::node_type node) {
  if (spare_.size() >= kMaxSpare) return;  // freed
  // What the entry owns beyond its buffers goes now: a handle or a caller's allocator kept
  // alive in a spare node would outlive the collective.
  node.mapped().handle.reset();
  node.mapped().allocate = nullptr;
  spare_.push_back(std::move(node));
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
  take_new(&out);
  return out;
}

void TensorQueue::take_new(std::vector<Request>* out) {
  out->clear();  // outside the lock: the previous round's (moved-from) requests
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
  auto it = table_.find(name);
  return it == table_.end() ? nullptr : &it->second;
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
    auto it = table_.find(responses[i].name);
    (*out)[i] = it == table_.end() ? nullptr : &it->second;
  }
}

void TensorQueue::remove(const std::string& name) {
  MutexLock lock(&mu_);
  Table::node_type node = table_.extract(name);
  if (!node.empty()) recycle(std::move(node));
}

void TensorQueue::remove_all(const std::vector<Entry*>& entries) {
  MutexLock lock(&mu_);
  for (Entry* e : entries) {
    auto it = table_.find(e->request.name);
    if (it != table_.end()) recycle(table_.extract(it));
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
