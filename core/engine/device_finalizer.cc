#include "core/engine/device_finalizer.h"

#include <algorithm>
#include <chrono>
#include <utility>
#include <vector>

namespace hora {
namespace engine {
namespace {

// Polling: yields between queries for the first kYieldFor of a job's wait (most buckets finish
// within it, and a completion seen late is a handle completed late), then sleeps from
// kFirstSleep doubling to kMaxSleep, so a long collective costs little CPU.
constexpr std::chrono::microseconds kYieldFor{200};
constexpr std::chrono::microseconds kFirstSleep{10};
constexpr std::chrono::microseconds kMaxSleep{200};

}  // namespace

DeviceFinalizer::DeviceFinalizer(DeviceRuntime* runtime, HealthFn health, double timeout_s)
    : runtime_(runtime), health_(std::move(health)), timeout_s_(timeout_s) {}

DeviceFinalizer::~DeviceFinalizer() {
  drain(Deadline::after_seconds(timeout_s_)).IgnoreError();  // its failures reached the handles
  {
    MutexLock lock(&mu_);
    stop_ = true;
  }
  cv_.notify_all();
  if (thread_.joinable()) thread_.join();
}

Status DeviceFinalizer::submit(Job job) {
  Status fatal;
  std::function<void(const Status&)> refused;  // the job's completion, after a fatal failure
  bool wake = false;
  {
    MutexLock lock(&mu_);
    if (!fatal_.ok()) {
      fatal = fatal_;
      refused = std::move(job.complete);
    } else {
      jobs_.emplace_back(std::move(job), Deadline::after_seconds(timeout_s_));
      max_pending_ = std::max(max_pending_, ++pending_);
      if (!thread_.joinable()) thread_ = std::thread([this] { loop(); });
      // A thread busy with earlier jobs finds this one without a wake-up (a system call per
      // bucket on the engine's thread otherwise).
      wake = idle_;
    }
  }
  if (refused) {
    refused(fatal);
    return fatal;
  }
  if (wake) cv_.notify_all();
  return Status::OK();
}

Status DeviceFinalizer::wait_for(const Job& job, Deadline deadline, bool* fatal) {
  std::chrono::microseconds sleep = kFirstSleep;
  const auto yield_until = std::chrono::steady_clock::now() + kYieldFor;
  for (;;) {
    StatusOr<bool> done = runtime_->query_event(job.device, job.event.get(), job.what);
    if (!done.ok()) return done.status();
    if (*done) return Status::OK();
    if (health_) {
      Status h = health_();
      if (!h.ok()) {
        *fatal = true;
        return Status(h.code(), job.what + " on the device: " + h.message());
      }
    }
    {
      MutexLock lock(&mu_);
      if (!abandon_.ok()) return Status(abandon_.code(), job.what + ": " + abandon_.message());
    }
    if (deadline.expired())
      return Status::timeout(job.what + ": the device work did not complete within " +
                             std::to_string(timeout_s_) + " s (HORA_TIMEOUT_S)");
    if (std::chrono::steady_clock::now() < yield_until) {
      std::this_thread::yield();
    } else {
      std::this_thread::sleep_for(sleep);
      sleep = std::min(sleep * 2, kMaxSleep);
    }
  }
}

void DeviceFinalizer::fail_queued(const Status& why) {
  std::deque<std::pair<Job, Deadline>> failed;
  {
    MutexLock lock(&mu_);
    failed.swap(jobs_);
  }
  for (auto& [job, deadline] : failed)
    job.complete(Status(why.code(), job.what + ": " + why.message()));
  MutexLock lock(&mu_);
  pending_ -= static_cast<int64_t>(failed.size());
  finished_ += static_cast<int64_t>(failed.size());
  cv_.notify_all();
}

void DeviceFinalizer::loop() {
  for (;;) {
    Job* job = nullptr;
    Deadline deadline = Deadline::after_seconds(0);
    {
      MutexLock lock(&mu_);
      idle_ = true;
      while (jobs_.empty() && !stop_) cv_.wait(mu_);
      idle_ = false;
      if (jobs_.empty()) return;
      // Only this thread pops: the front stays put while the engine's thread appends.
      job = &jobs_.front().first;
      deadline = jobs_.front().second;
    }
    bool fatal = false;
    Status s = wait_for(*job, deadline, &fatal);
    Job done;
    {
      MutexLock lock(&mu_);
      done = std::move(jobs_.front().first);
      jobs_.pop_front();
      if (fatal) fatal_ = s;
    }
    done.complete(s);
    bool drainers = false;
    {
      MutexLock lock(&mu_);
      --pending_;
      ++finished_;
      drainers = drainers_ > 0;
    }
    if (drainers) cv_.notify_all();
    Status rest;
    {
      MutexLock lock(&mu_);
      rest = fatal_.ok() ? abandon_ : fatal_;
    }
    if (!rest.ok()) fail_queued(rest);
  }
}

Status DeviceFinalizer::drain(Deadline deadline) {
  MutexLock lock(&mu_);
  ++drainers_;
  while (pending_ > 0 && !deadline.expired()) cv_.wait_until(mu_, deadline.at());
  Status result = fatal_;
  if (pending_ > 0) {
    // The GPU did not finish in time: the waiting job and the rest fail (their outputs may
    // still be written later; the engine is stopping).
    abandon_ = Status::timeout("the device work did not complete before the drain's deadline");
    result = abandon_;
    const Deadline grace = Deadline::after(std::chrono::milliseconds(2000));
    while (pending_ > 0 && !grace.expired()) cv_.wait_until(mu_, grace.at());
    abandon_ = Status::OK();
  }
  --drainers_;
  return result;
}

int64_t DeviceFinalizer::in_flight() const {
  MutexLock lock(&mu_);
  return pending_;
}

int64_t DeviceFinalizer::max_in_flight() const {
  MutexLock lock(&mu_);
  return max_pending_;
}

int64_t DeviceFinalizer::finished() const {
  MutexLock lock(&mu_);
  return finished_;
}

}  // namespace engine
}  // namespace hora
