// PrefixStore: scopes every key of another Store under "prefix/" (a "/" is added unless the
// prefix ends with one), so several communicators
// (or several uses within one) share one store without their keys colliding.
// Holds a non-owning reference: the base store is owned by the Context and outlives every
// communicator built on it. Thread-safe as the base store is.
#pragma once

#include <string>

#include "collectives/rendezvous/store.h"

namespace hora {
namespace collectives {

class PrefixStore : public Store {
 public:
  PrefixStore(std::string prefix, Store& base) : prefix_(std::move(prefix)), base_(base) {
    if (prefix_.empty() || prefix_.back() != '/') prefix_ += '/';
  }

  Status set(const std::string& key, const Bytes& value) override {
    return base_.set(prefix_ + key, value);
  }
  StatusOr<Bytes> get(const std::string& key, Deadline deadline) override {
    return base_.get(prefix_ + key, deadline);
  }
  StatusOr<int64_t> add(const std::string& key, int64_t delta) override {
    return base_.add(prefix_ + key, delta);
  }
  StatusOr<bool> check(const std::vector<std::string>& keys) override {
    return base_.check(scoped(keys));
  }
  Status wait(const std::vector<std::string>& keys, Deadline deadline) override {
    return base_.wait(scoped(keys), deadline);
  }
  StatusOr<bool> remove(const std::string& key) override { return base_.remove(prefix_ + key); }
  Status set_until(const std::string& key, const Bytes& value, Deadline deadline) override {
    return base_.set_until(prefix_ + key, value, deadline);
  }
  StatusOr<bool> check_until(const std::vector<std::string>& keys, Deadline deadline) override {
    return base_.check_until(scoped(keys), deadline);
  }

 private:
  std::vector<std::string> scoped(const std::vector<std::string>& keys) const {
    std::vector<std::string> out;
    out.reserve(keys.size());
    for (const auto& k : keys) out.push_back(prefix_ + k);
    return out;
  }

  std::string prefix_;
  Store& base_;
};

}  // namespace collectives
}  // namespace hora
