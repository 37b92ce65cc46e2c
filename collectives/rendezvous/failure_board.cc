#include "collectives/rendezvous/failure_board.h"

#include <thread>
#include <vector>

#include "collectives/failed_ranks.h"
#include "core/base/deadline.h"

namespace hora {
namespace collectives {
namespace {
constexpr const char* kReportsMarker = "; reports from other ranks: ";
}  // namespace

bool FailureBoard::has_reports(const std::string& message) {
  return message.find(kReportsMarker) != std::string::npos;
}

void FailureBoard::post(const std::string& mine, std::chrono::milliseconds wait) {
  if (store_ == nullptr || size_ <= 1) return;
  const std::string own = prefix_ + "failure/" + std::to_string(rank_);
  // Bounded: the store's host may be the rank that stopped. Best effort: a post that fails
  // (the store's host is gone) leaves the peers to their own deadlines, which still fire.
  store_->set_until(own, Bytes(mine.begin(), mine.end()), Deadline::after(wait)).IgnoreError();
}

std::string FailureBoard::collect(const std::string& mine, std::chrono::milliseconds wait) {
  if (store_ == nullptr || size_ <= 1) return mine;
  constexpr size_t kMaxReport = 400;
  std::vector<bool> seen(size_, false);
  seen[rank_] = true;
  std::string reports;
  const Deadline deadline = Deadline::after(wait);
  int missing = size_ - 1;
  while (missing > 0 && !deadline.expired()) {
    for (int r = 0; r < size_; ++r) {
      if (seen[r]) continue;
      if (FailedRanks::process().contains(FailedRanks::global_rank(members_, r))) {
        seen[r] = true;  // a rank found dead or stopped posts nothing: no wait for it
        --missing;
        continue;
      }
      const std::string key = prefix_ + "failure/" + std::to_string(r);
      StatusOr<bool> there = store_->check_until({key}, deadline);
      if (!there.ok()) return mine + reports;  // the store is gone
      if (!*there) continue;
      StatusOr<Bytes> value = store_->get(key, deadline);
      if (!value.ok()) continue;
      seen[r] = true;
      --missing;
      std::string text(value->begin(), value->end());
      if (text.size() > kMaxReport) text = text.substr(0, kMaxReport) + "...";
      reports += (reports.empty() ? kReportsMarker : "; ") + std::string("rank ") +
                 std::to_string(r) + ": " + text;
    }
    if (missing > 0) std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  return mine + reports;
}

}  // namespace collectives
}  // namespace hora
