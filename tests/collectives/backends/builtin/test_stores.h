// Stores for the builtin backend's tests, local to them: an in-process store (threads as
// ranks) and a directory store that works across fork()ed processes. (The project's
// MemoryStore/FileStore were not written yet when these tests were; they can replace these.)
#pragma once

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <condition_variable>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>
#include <string>
#include <thread>

#include "collectives/rendezvous/store.h"

namespace hora {
namespace collectives {
namespace builtin_test {

class LocalStore : public Store {
 public:
  Status set(const std::string& key, const Bytes& value) override {
    std::lock_guard<std::mutex> lock(mu_);
    map_[key] = value;
    cv_.notify_all();
    return Status::OK();
  }
  StatusOr<Bytes> get(const std::string& key, Deadline deadline) override {
    std::unique_lock<std::mutex> lock(mu_);
    if (!cv_.wait_until(lock, deadline.at(), [&] { return map_.count(key) > 0; }))
      return Status::timeout("store key " + key + " never appeared");
    return map_[key];
  }
  StatusOr<int64_t> add(const std::string& key, int64_t delta) override {
    std::lock_guard<std::mutex> lock(mu_);
    int64_t v = 0;
    auto it = map_.find(key);
    if (it != map_.end()) v = std::stoll(std::string(it->second.begin(), it->second.end()));
    v += delta;
    std::string s = std::to_string(v);
    map_[key] = Bytes(s.begin(), s.end());
    cv_.notify_all();
    return v;
  }
  StatusOr<bool> check(const std::vector<std::string>& keys) override {
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& k : keys)
      if (!map_.count(k)) return false;
    return true;
  }
  Status wait(const std::vector<std::string>& keys, Deadline deadline) override {
    for (auto& k : keys) HORA_RETURN_IF_ERROR(get(k, deadline).status());
    return Status::OK();
  }
  StatusOr<bool> remove(const std::string& key) override {
    std::lock_guard<std::mutex> lock(mu_);
    return map_.erase(key) > 0;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, Bytes> map_;
};

// One file per key in `dir`; writes are atomic renames, add() holds an flock. Waiting polls
// the directory every 200 us (test-only: there is no cross-process notification).
class DirStore : public Store {
 public:
  explicit DirStore(std::string dir) : dir_(std::move(dir)) {}
  Status set(const std::string& key, const Bytes& value) override {
    std::string tmp = path(key) + ".tmp" + std::to_string(getpid());
    {
      std::ofstream f(tmp, std::ios::binary);
      f.write(reinterpret_cast<const char*>(value.data()),
              static_cast<std::streamsize>(value.size()));
    }
    if (rename(tmp.c_str(), path(key).c_str()) != 0) return Status::io("rename failed for " + key);
    return Status::OK();
  }
  StatusOr<Bytes> get(const std::string& key, Deadline deadline) override {
    for (;;) {
      std::ifstream f(path(key), std::ios::binary);
      if (f) {
        std::stringstream ss;
        ss << f.rdbuf();
        std::string s = ss.str();
        return Bytes(s.begin(), s.end());
      }
      if (deadline.expired()) return Status::timeout("store key " + key + " never appeared");
      std::this_thread::sleep_for(std::chrono::microseconds(200));
    }
  }
  StatusOr<int64_t> add(const std::string& key, int64_t delta) override {
    int fd = open((dir_ + "/.lock").c_str(), O_CREAT | O_RDWR, 0600);
    flock(fd, LOCK_EX);
    int64_t v = 0;
    {
      std::ifstream f(path(key));
      if (f) f >> v;
    }
    v += delta;
    std::string s = std::to_string(v);
    Status st = set(key, Bytes(s.begin(), s.end()));
    flock(fd, LOCK_UN);
    close(fd);
    HORA_RETURN_IF_ERROR(st);
    return v;
  }
  StatusOr<bool> check(const std::vector<std::string>& keys) override {
    for (auto& k : keys)
      if (access(path(k).c_str(), F_OK) != 0) return false;
    return true;
  }
  Status wait(const std::vector<std::string>& keys, Deadline deadline) override {
    for (auto& k : keys) HORA_RETURN_IF_ERROR(get(k, deadline).status());
    return Status::OK();
  }
  StatusOr<bool> remove(const std::string& key) override { return unlink(path(key).c_str()) == 0; }

 private:
  std::string path(const std::string& key) const {
    std::string p = dir_ + "/k_";
    for (char c : key) p += (c == '/') ? '~' : c;
    return p;
  }
  std::string dir_;
};

}  // namespace builtin_test
}  // namespace collectives
}  // namespace hora
