#include "collectives/rendezvous/memory_store.h"

#include <cerrno>
#include <cstdlib>

namespace hora {
namespace collectives {

StatusOr<int64_t> parse_counter(const std::string& key, const Bytes& value) {
  std::string text(value.begin(), value.end());
  char* end = nullptr;
  errno = 0;
  long long n = std::strtoll(text.c_str(), &end, 10);
  if (text.empty() || errno != 0 || *end != '\0')
    return Status::invalid_argument("store key '" + key + "' holds '" + text +
                                    "', which is not a counter: add() expects a decimal integer");
  return static_cast<int64_t>(n);
}

Bytes format_counter(int64_t value) {
  const std::string text = std::to_string(value);
  return Bytes(text.begin(), text.end());
}

std::string join_keys(const std::vector<std::string>& keys) {
  std::string out;
  for (const auto& k : keys) out += (out.empty() ? "'" : ", '") + k + "'";
  return out;
}

Status MemoryStore::set(const std::string& key, const Bytes& value) {
  {
    MutexLock lock(&mu_);
    data_[key] = value;
  }
  changed_.notify_all();
  return Status::OK();
}

bool MemoryStore::has_all(const std::vector<std::string>& keys) const {
  for (const auto& k : keys)
    if (!data_.count(k)) return false;
  return true;
}

StatusOr<Bytes> MemoryStore::get(const std::string& key, Deadline deadline) {
  MutexLock lock(&mu_);
  while (!data_.count(key) && !deadline.expired()) changed_.wait_until(mu_, deadline.at());
  if (!data_.count(key))
    return Status::timeout("store get timed out waiting for key '" + key + "'");
  return data_[key];
}

StatusOr<int64_t> MemoryStore::add(const std::string& key, int64_t delta) {
  int64_t result;
  {
    MutexLock lock(&mu_);
    int64_t current = 0;
    auto it = data_.find(key);
    if (it != data_.end()) {
      HORA_ASSIGN_OR_RETURN(current, parse_counter(key, it->second));
    }
    result = static_cast<int64_t>(static_cast<uint64_t>(current) + static_cast<uint64_t>(delta));
    data_[key] = format_counter(result);
  }
  changed_.notify_all();
  return result;
}

StatusOr<bool> MemoryStore::check(const std::vector<std::string>& keys) {
  MutexLock lock(&mu_);
  return has_all(keys);
}

Status MemoryStore::wait(const std::vector<std::string>& keys, Deadline deadline) {
  MutexLock lock(&mu_);
  while (!has_all(keys) && !deadline.expired()) changed_.wait_until(mu_, deadline.at());
  if (!has_all(keys)) {
    std::vector<std::string> missing;
    for (const auto& k : keys)
      if (!data_.count(k)) missing.push_back(k);
    return Status::timeout("store wait timed out; keys still missing: " + join_keys(missing));
  }
  return Status::OK();
}

StatusOr<bool> MemoryStore::remove(const std::string& key) {
  MutexLock lock(&mu_);
  return data_.erase(key) > 0;
}

}  // namespace collectives
}  // namespace hora
