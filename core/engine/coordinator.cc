#include "core/engine/coordinator.h"

#include <algorithm>
#include <map>

#include "hora/logging.h"

namespace hora {
namespace engine {

void Coordinator::ingest(int rank, const std::vector<Request>& requests,
                         std::chrono::steady_clock::time_point now) {
  for (const Request& q : requests) {
    if (q.type == CollectiveType::kJoin) {
      if (!joined_[rank]) {
        joined_[rank] = true;
        ++joined_count_;
        // When the rank called join: its arrival here less the time its request waited on
        // its own rank (a join enqueued during a round goes out with the next one).
        const auto at = now - std::chrono::microseconds(q.waited_us);
        if (last_joined_ < 0 || at >= last_joined_at_) {
          last_joined_ = rank;
          last_joined_at_ = at;
        }
      }
      continue;
    }
    Pending& p = table_[q.name];
    if (p.present.empty()) {
      p.requests.resize(size_);
      p.present.assign(size_, false);
      p.seq = next_seq_++;
      p.first_seen = now;
    }
    if (p.present[rank]) {
      // The queue refuses a name already in flight, so this is a rank resubmitting after its
      // cache entry was invalidated: the newer request replaces the older one.
      p.requests[rank] = q;
      continue;
    }
    p.requests[rank] = q;
    p.requests[rank].rank = rank;
    p.present[rank] = true;
    ++p.count;
  }
}

bool Coordinator::ready(const Pending& p) const {
  int n = p.count;
  for (int r = 0; r < size_; ++r)
    if (joined_[r] && !p.present[r]) ++n;
  return n == size_;
}

Response Coordinator::decide(const Pending& p) const {
  std::vector<const Request*> present;
  std::vector<int> absent_joined;
  for (int r = 0; r < size_; ++r) {
    if (p.present[r]) {
      present.push_back(&p.requests[r]);
    } else {
      absent_joined.push_back(r);
    }
  }
  const Request& first = *present.front();
  Response resp;
  resp.name = first.name;
  resp.type = first.type;
  resp.dtype = first.dtype;
  resp.shape = first.shape;
  resp.device = first.device;
  resp.op = first.op;
  resp.root = first.root;
  resp.prescale = first.prescale;
  resp.postscale = first.postscale;
  resp.compression = first.compression;
  resp.group_key = first.group_key;
  resp.group_size = first.group_size;

  std::string error = validate_requests(present, size_);
  if (error.empty() && !absent_joined.empty() && first.type != CollectiveType::kBarrier) {
    if (!joined_zeros_ok(first.type, first.op)) {
      std::string ranks;
      for (int r : absent_joined) ranks += (ranks.empty() ? "" : ",") + std::to_string(r);
      error = "tensor '" + first.name + "': " + collective_name(first.type) +
              (first.type == CollectiveType::kAllreduce
                   ? std::string(" with op ") + reduce_op_name(first.op)
                   : std::string()) +
              " while rank(s) " + ranks +
              " have joined: joined ranks contribute zeros, which only allreduce with sum, "
              "average or adasum can take";
    }
  }
  if (!error.empty()) {
    resp.error = error;
    resp.error_code = static_cast<int32_t>(StatusCode::kMismatch);
    return resp;
  }
  if (first.type == CollectiveType::kAllgather) {
    for (int r = 0; r < size_; ++r) resp.first_dims.push_back(p.requests[r].shape.at(0));
  }
  if (first.type == CollectiveType::kAlltoall) {
    for (int r = 0; r < size_; ++r)
      resp.splits.insert(resp.splits.end(), p.requests[r].splits.begin(),
                         p.requests[r].splits.end());
  }
  return resp;
}

std::vector<Response> Coordinator::collect() {
  std::vector<Response> out;
  // Ready names in first-arrival order; groups only when every member is ready.
  std::map<uint64_t, const std::string*> ready_by_seq;
  std::map<std::string, int> group_ready;
  for (const auto& kv : table_) {
    if (!ready(kv.second)) continue;
    ready_by_seq[kv.second.seq] = &kv.first;
    const Request& any =
        kv.second.requests[std::find(kv.second.present.begin(), kv.second.present.end(), true) -
                           kv.second.present.begin()];
    if (any.group_size > 0) ++group_ready[any.group_key];
  }
  std::vector<std::string> done;
  for (const auto& kv : ready_by_seq) {
    const Pending& p = table_.at(*kv.second);
    const Request& any =
        p.requests[std::find(p.present.begin(), p.present.end(), true) - p.present.begin()];
    if (any.group_size > 0 && group_ready[any.group_key] < any.group_size) continue;
    out.push_back(decide(p));
    done.push_back(*kv.second);
  }
  for (const std::string& name : done) table_.erase(name);
  if (joined_count_ == size_) {
    Response join;
    join.name = "hora.join";
    join.type = CollectiveType::kJoin;
    join.last_joined = last_joined_;
    out.push_back(join);
    joined_.assign(size_, false);
    joined_count_ = 0;
    last_joined_ = -1;
  }
  return out;
}

std::vector<StalledTensor> Coordinator::pending() const {
  std::vector<StalledTensor> out;
  for (const auto& kv : table_) {
    StalledTensor t;
    t.name = kv.first;
    t.first_seen = kv.second.first_seen;
    for (int r = 0; r < size_; ++r)
      if (kv.second.present[r]) t.ready_ranks.push_back(r);
    out.push_back(std::move(t));
  }
  std::sort(out.begin(), out.end(), [](const StalledTensor& a, const StalledTensor& b) {
    return a.first_seen < b.first_seen;
  });
  return out;
}

}  // namespace engine
}  // namespace hora
