#include "adapters/python/c_api_reducers.h"

#include <pthread.h>

#include <utility>

namespace hora {
namespace python {

CApiReducers::~CApiReducers() {
  std::thread waiter;
  {
    MutexLock lock(&mu_);
    stopping_ = true;
    waiter = std::move(waiter_);
  }
  cv_.notify_all();
  if (waiter.joinable()) waiter.join();
}

StatusOr<int64_t> CApiReducers::create(std::vector<std::string> names,
                                       GradientReducerOptions options) {
  HORA_ASSIGN_OR_RETURN(std::unique_ptr<GradientReducer> reducer,
                        GradientReducer::create(std::move(names), std::move(options)));
  MutexLock lock(&mu_);
  const int64_t id = next_id_++;
  reducers_.emplace(id, std::shared_ptr<GradientReducer>(std::move(reducer)));
  return id;
}

StatusOr<std::shared_ptr<GradientReducer>> CApiReducers::find(int64_t id) const {
  MutexLock lock(&mu_);
  auto it = reducers_.find(id);
  if (it == reducers_.end())
    return Status::failed_precondition(
        "gradient reducer " + std::to_string(id) +
        " does not exist (released with its optimizer, or made in another process)");
  return it->second;
}

void CApiReducers::release(int64_t id) {
  std::shared_ptr<GradientReducer> last;
  {
    MutexLock lock(&mu_);
    auto it = reducers_.find(id);
    if (it == reducers_.end()) return;
    last = std::move(it->second);
    reducers_.erase(it);
  }
  last.reset();  // outside the mutex: the destructor may wait for collectives
}

void CApiReducers::synchronize_later(std::shared_ptr<GradientReducer> reducer,
                                     std::function<void(Status)> callback) {
  {
    MutexLock lock(&mu_);
    jobs_.push_back(Job{std::move(reducer), std::move(callback)});
    if (!waiter_.joinable()) waiter_ = std::thread([this] { run_waiter(); });
  }
  cv_.notify_one();
}

void CApiReducers::run_waiter() {
  pthread_setname_np(pthread_self(), "hora-reducer-wt");
  for (;;) {
    Job job;
    {
      MutexLock lock(&mu_);
      while (!stopping_ && jobs_.empty()) cv_.wait(mu_);
      if (jobs_.empty()) return;  // stopping, nothing left
      job = std::move(jobs_.front());
      jobs_.pop_front();
    }
    Status s = job.reducer->synchronize();
    job.callback(std::move(s));
  }
}

CApiReducers& c_api_reducers() {
  static CApiReducers reducers;
  return reducers;
}

}  // namespace python
}  // namespace hora
