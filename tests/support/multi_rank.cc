#include "tests/support/multi_rank.h"

#include <exception>
#include <mutex>
#include <string>
#include <thread>

namespace hora {
namespace test_support {

namespace {

// Runs fn on every rank; `failure_order` gets the failed ranks in the order they failed.
std::vector<Status> run_all(int n, const InProcRankFn& fn, SendMode mode,
                            std::vector<int>* failure_order) {
  InProcWorld world(n, mode);
  std::vector<std::unique_ptr<InProcCommunicator>> comms;
  for (int r = 0; r < n; ++r) comms.push_back(world.communicator(r));
  std::vector<Status> statuses(n);
  std::mutex mu;  // guards failure_order
  std::vector<std::thread> threads;
  threads.reserve(n);
  for (int r = 0; r < n; ++r) {
    threads.emplace_back([&, r]() {
      Status status;
      try {
        status = fn(*comms[r], world);
      } catch (const std::exception& e) {
        status = Status::internal(std::string("exception: ") + e.what());
      } catch (...) {
        status = Status::internal("unknown exception");
      }
      if (!status.ok()) {
        {
          std::lock_guard<std::mutex> lock(mu);
          failure_order->push_back(r);
        }
        comms[r]->fail(status);  // after recording: peers fail only after this rank
      }
      statuses[r] = std::move(status);
    });
  }
  for (auto& thread : threads) thread.join();
  return statuses;
}

}  // namespace

std::vector<Status> run_ranks_each(int n, const InProcRankFn& fn, SendMode mode) {
  std::vector<int> order;
  return run_all(n, fn, mode, &order);
}

Status run_ranks(int n, const RankFn& fn, SendMode mode) {
  std::vector<int> order;
  std::vector<Status> statuses = run_all(
      n, [&](InProcCommunicator& comm, InProcWorld&) { return fn(comm); }, mode, &order);
  if (order.empty()) return Status::OK();
  const Status& first = statuses[order.front()];
  return Status(first.code(), "rank " + std::to_string(order.front()) + ": " + first.message());
}

}  // namespace test_support
}  // namespace hora
