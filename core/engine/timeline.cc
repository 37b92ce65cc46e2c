#include "core/engine/timeline.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "hora/logging.h"

namespace hora {
namespace engine {
namespace {

constexpr auto kFlushInterval = std::chrono::milliseconds(100);
constexpr size_t kBatchRecords = 4096;  // wake the writer early past this many
constexpr char kClosing[] = "\n]\n";
constexpr size_t kClosingBytes = sizeof(kClosing) - 1;

// pwrite all of `text` at `offset`; false (errno set) on failure.
bool pwrite_all(int fd, const std::string& text, off_t offset) {
  size_t done = 0;
  while (done < text.size()) {
    const ssize_t n =
        ::pwrite(fd, text.data() + done, text.size() - done, offset + static_cast<off_t>(done));
    if (n < 0) {
      if (errno == EINTR) continue;
      return false;
    }
    done += static_cast<size_t>(n);
  }
  return true;
}

}  // namespace

Status Timeline::open(const std::string& path, bool mark_cycles) {
  MutexLock control(&control_mu_);
  close_locked();
  if (path.empty()) return Status::OK();
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0)
    return Status::io("HORA_TIMELINE='" + path +
                      "': cannot create the file: " + std::strerror(errno));
  const std::string empty = std::string("[") + kClosing;
  if (!pwrite_all(fd, empty, 0)) {
    const int err = errno;
    ::close(fd);
    return Status::io("HORA_TIMELINE='" + path + "': cannot write: " + std::strerror(err));
  }
  fd_ = fd;
  path_ = path;
  end_ = 1;
  empty_ = true;
  failed_ = false;
  rows_.clear();
  origin_ = std::chrono::steady_clock::now();
  {
    MutexLock lock(&mu_);
    stop_ = false;
    pending_.clear();  // records that raced the last close
  }
  writer_ = std::thread([this] { writer_loop(); });
  mark_cycles_.store(mark_cycles, std::memory_order_relaxed);
  enabled_.store(true, std::memory_order_release);
  return Status::OK();
}

void Timeline::event(const std::string& tensor, const char* phase, TimePoint start, TimePoint end,
                     Args args) {
  if (!enabled()) return;
  Record r;
  r.tensor = tensor;
  r.phase = phase;
  r.start = start;
  r.end = end;
  r.args = std::move(args);
  push(std::move(r));
}

void Timeline::mark(const std::string& tensor, std::string label, TimePoint at) {
  if (!enabled()) return;
  Record r;
  r.tensor = tensor;
  r.phase = std::move(label);
  r.start = r.end = at;
  r.instant = true;
  push(std::move(r));
}

void Timeline::mark_cycle(TimePoint at) {
  if (!enabled() || !marks_cycles()) return;
  Record r;
  r.phase = "CYCLE_START";
  r.start = r.end = at;
  r.instant = true;
  r.global = true;
  push(std::move(r));
}

void Timeline::push(Record r) {
  bool wake = false;
  {
    MutexLock lock(&mu_);
    pending_.push_back(std::move(r));
    wake = pending_.size() >= kBatchRecords;
  }
  if (wake) cv_.notify_one();
}

void Timeline::writer_loop() {
  std::vector<Record> batch;
  for (;;) {
    bool stopping = false;
    {
      MutexLock lock(&mu_);
      const auto until = std::chrono::steady_clock::now() + kFlushInterval;
      while (!stop_ && pending_.size() < kBatchRecords && std::chrono::steady_clock::now() < until)
        cv_.wait_until(mu_, until);
      batch.swap(pending_);
      stopping = stop_;
    }
    if (!batch.empty()) write_batch(batch);
    batch.clear();
    if (stopping) {
      MutexLock lock(&mu_);
      if (pending_.empty()) return;
    }
  }
}

int Timeline::row_of(const std::string& tensor, std::string* text) {
  auto it = rows_.find(tensor);
  if (it != rows_.end()) return it->second;
  const int row = static_cast<int>(rows_.size()) + 1;
  rows_.emplace(tensor, row);
  nlohmann::json meta = {
      {"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", row}, {"args", {{"name", tensor}}}};
  *text += (empty_ ? "\n" : ",\n") + meta.dump();
  empty_ = false;
  return row;
}

void Timeline::write_batch(const std::vector<Record>& batch) {
  if (failed_) return;
  using us = std::chrono::duration<double, std::micro>;
  std::string text;
  for (const Record& r : batch) {
    const int row = r.global ? 0 : row_of(r.tensor, &text);
    // A phase that began before this file opened (a tensor enqueued before start_timeline,
    // unstamped) starts where the file does.
    const TimePoint start = std::max(r.start, origin_);
    nlohmann::json e = {{"name", r.phase},
                        {"ph", r.instant ? "i" : "X"},
                        {"pid", 0},
                        {"tid", row},
                        {"ts", us(start - origin_).count()}};
    if (r.instant) {
      e["s"] = r.global ? "g" : "t";  // across the trace, or on the tensor's row
    } else {
      e["dur"] = us(std::max(r.end, start) - start).count();
    }
    if (!r.args.empty()) {
      nlohmann::json args = nlohmann::json::object();
      for (const auto& kv : r.args) args[kv.first] = kv.second;
      e["args"] = std::move(args);
    }
    text += (empty_ ? "\n" : ",\n") + e.dump();
    empty_ = false;
  }
  text += kClosing;
  if (!pwrite_all(fd_, text, end_)) {
    failed_ = true;
    HORA_LOG(kWarning) << "timeline '" << path_ << "': write failed (" << std::strerror(errno)
                       << "); later events are dropped";
    return;
  }
  end_ += static_cast<off_t>(text.size() - kClosingBytes);
}

void Timeline::close() {
  MutexLock control(&control_mu_);
  close_locked();
}

void Timeline::close_locked() {
  enabled_.store(false, std::memory_order_release);
  mark_cycles_.store(false, std::memory_order_relaxed);
  if (writer_.joinable()) {
    {
      MutexLock lock(&mu_);
      stop_ = true;
    }
    cv_.notify_one();
    writer_.join();
  }
  if (fd_ >= 0) {
    ::close(fd_);
    fd_ = -1;
  }
}

}  // namespace engine
}  // namespace hora
