#include "core/engine/tensor_queue.h"

#include <algorithm>
#include <utility>

namespace hora {
namespace engine {
namespace {

// Whether a view already holds `v` (field for field).
bool same_view(const TensorView& a, const TensorView& v) {
  return a.data() == v.data() && a.stream() == v.stream() && a.dtype() == v.dtype() &&
         a.device() == v.device() && a.shape() == v.shape();
}

}  // namespace

TensorQueue::Slot* TensorQueue::claim(const std::string& name, CollectiveType type, int32_t* id,
                                      Status* error, bool* interned) {
  if (closed_) {
    *error = Status(closed_why_.code(), "tensor '" + name + "': " + closed_why_.message());
    return nullptr;
  }
  bool added = false;
  *id = names_.intern(name, &added);
  if (interned != nullptr) *interned = added;
  if (static_cast<size_t>(*id) >= slots_.size()) slots_.grow_to(static_cast<size_t>(*id) + 1);
  Slot& slot = slots_[static_cast<size_t>(*id)];
  if (slot.in_flight) {
    *error = Status::invalid_argument(
        "tensor '" + name + "': " + collective_name(type) +
        " enqueued while a collective of that name is still in flight on this rank (wait for "
        "its handle before reusing the name)");
    return nullptr;
  }
  return &slot;
}

void TensorQueue::new_version(Slot& slot) {
  if (++slot.version == 0) ++slot.version;  // 0 means unknown (Request::version)
  slot.entry.request.version = slot.version;
}

void TensorQueue::admit(int32_t id) {
  Slot& slot = slots_[static_cast<size_t>(id)];
  slot.entry.request.local_entry = &slot.entry;
  slot.entry.request.name_id = id;
  slot.in_flight = true;
  ++in_flight_;
  // take_new() may leave fresh_ without capacity: start at the largest burst seen (bounded),
  // so a step's requests are not moved again and again as the vector grows.
  if (fresh_.empty()) fresh_.reserve(fresh_reserve_);
  // The round reads each request where it lies, in its entry (no copy per tensor).
  fresh_.push_back(&slot.entry.request);
  if (fresh_.size() > fresh_reserve_) fresh_reserve_ = std::min(fresh_.size(), kMaxFreshReserve);
}

Status TensorQueue::enqueue(std::vector<Entry>&& entries) {
  {
    MutexLock lock(&mu_);
    if (entries.empty()) return Status::OK();
    // Each entry goes into its name's slot with one lookup (the name interned on its first
    // enqueue); a name already in flight, or twice in the batch, undoes the batch.
    inserted_.clear();
    for (Entry& e : entries) {
      int32_t id = -1;
      Status error;
      Slot* slot = claim(e.request.name, e.request.type, &id, &error);
      if (slot == nullptr) {
        for (int32_t done : inserted_) release(done);
        fresh_.resize(fresh_.size() - inserted_.size());  // admitted last, at its end
        return error;
      }
      slot->entry = std::move(e);
      new_version(*slot);
      admit(id);  // in flight: a repeat later in the batch is refused
      inserted_.push_back(id);
    }
    // Only wait_for_work waits on cv_, and only while fresh_ is empty: a notification per
    // enqueue would only repeat the first.
    if (fresh_.size() > inserted_.size()) return Status::OK();
  }
  cv_.notify_one();
  return Status::OK();
}

Status TensorQueue::enqueue_allreduce(AllreduceSpec&& spec) {
  {
    MutexLock lock(&mu_);
    int32_t id = -1;
    Status error;
    bool interned = true;
    Slot* slot = claim(*spec.name, CollectiveType::kAllreduce, &id, &error, &interned);
    if (slot == nullptr) return error;
    // What add_entry (core/api.cc) builds, field by field, into the entry the slot keeps. A
    // training step enqueues the same request under a name step after step: then the request
    // there is kept with its version, which the response cache matches without its fields.
    Request& q = slot->entry.request;
    const TensorView& in = *spec.in;
    // The name is the slot's unless the call interned it (claim).
    const bool same = !interned && q.version != 0 && q.type == CollectiveType::kAllreduce &&
                      q.dtype == in.dtype() && q.shape == in.shape() && q.device == in.device() &&
                      q.op == spec.op && q.root == 0 && q.prescale == spec.prescale &&
                      q.postscale == spec.postscale && q.compression == spec.compression &&
                      q.splits.empty() && q.group_key.empty() && q.group_size == 0 &&
                      q.waited_us == 0;
    if (!same) {
      if (interned) q.name = *spec.name;
      q.type = CollectiveType::kAllreduce;
      q.dtype = in.dtype();
      q.shape = in.shape();
      q.device = in.device();
      q.op = spec.op;
      q.root = 0;
      q.prescale = spec.prescale;
      q.postscale = spec.postscale;
      q.compression = spec.compression;
      q.splits.clear();
      q.group_key.clear();
      q.group_size = 0;
      q.waited_us = 0;
      new_version(*slot);
    }
    // Written only where they differ: a step's slots are out of L1 by the next step, and
    // each line dirtied here is one more store that the mutex's unlock waits for.
    if (q.rank != 0) q.rank = 0;
    Entry& e = slot->entry;
    if (!same_view(e.in, in)) e.in = in;
    if (!same_view(e.out, *spec.out)) e.out = *spec.out;
    if (e.allocate) e.allocate = nullptr;
    e.handle = std::move(spec.handle);
    if (e.enqueued != spec.enqueued) e.enqueued = spec.enqueued;
    admit(id);
    if (fresh_.size() > 1) return Status::OK();  // notified when fresh_ became non-empty
  }
  cv_.notify_one();
  return Status::OK();
}

void TensorQueue::release(int32_t id) {
  Slot& slot = slots_[static_cast<size_t>(id)];
  slot.in_flight = false;
  --in_flight_;
  slot.entry.handle.reset();
  slot.entry.allocate = nullptr;
  slot.entry.ready = {};  // a device input's event goes back to its pool
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
  burst_cv_.notify_one();  // a burst window ends too (the thread may sleep through one)
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
  ++takes_;
}

uint64_t TensorQueue::takes() const {
  MutexLock lock(&mu_);
  return takes_;
}

TensorQueue::AfterHelp TensorQueue::wait_after_help(uint64_t takes, Clock::time_point until) {
  MutexLock lock(&mu_);
  while (true) {
    if (woken_ || shutdown_requested_) {
      woken_ = false;
      return AfterHelp::kWoken;
    }
    if (takes_ != takes && !fresh_.empty()) return AfterHelp::kFresh;
    if (Clock::now() >= until) return AfterHelp::kTimeout;
    cv_.wait_until(mu_, until);
  }
}

bool TensorQueue::wait_in_burst(Clock::time_point until, size_t* fresh) {
  MutexLock lock(&mu_);
  while (!burst_over_ && !shutdown_requested_ && !woken_ && Clock::now() < until)
    burst_cv_.wait_until(mu_, until);
  *fresh = fresh_.size();
  return burst_over_ || shutdown_requested_ || woken_;
}

void TensorQueue::waiting(size_t wake_at_bytes) {
  {
    MutexLock lock(&mu_);
    if (fresh_.empty() || burst_over_) return;
    burst_over_ = true;
    size_t work = 0;
    for (size_t i = 0; i < fresh_.size() && work < wake_at_bytes; ++i) {
      const Entry& e = *fresh_[i]->local_entry;
      work += kTensorBytes + static_cast<size_t>(std::max(e.in.byte_count(), e.out.byte_count()));
    }
    if (work < wake_at_bytes) return;
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
  for (size_t id = 0; id < slots_.size(); ++id) {
    Slot& slot = slots_[id];
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
