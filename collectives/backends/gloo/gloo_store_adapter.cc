#include "collectives/backends/gloo/gloo_store_adapter.h"

#include <gloo/common/error.h>

namespace hora {
namespace collectives {
namespace gloo_backend {
namespace {

[[noreturn]] void throw_status(const Status& status) {
  throw ::gloo::IoException("rendezvous store: " + status.to_string());
}

}  // namespace

Deadline GlooStoreAdapter::bounded(std::chrono::milliseconds timeout) const {
  if (timeout.count() <= 0) return deadline_;
  Deadline by_timeout = Deadline::after(timeout);
  return by_timeout.at() < deadline_.at() ? by_timeout : deadline_;
}

void GlooStoreAdapter::set(const std::string& key, const std::vector<char>& data) {
  Status status = store_.set(key, Bytes(data.begin(), data.end()));
  if (!status.ok()) throw_status(status);
}

std::vector<char> GlooStoreAdapter::get(const std::string& key) {
  StatusOr<Bytes> value = store_.get(key, deadline_);
  if (!value.ok()) throw_status(value.status());
  return std::vector<char>(value.value().begin(), value.value().end());
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys) {
  Status status = store_.wait(keys, deadline_);
  if (!status.ok()) throw_status(status);
}

void GlooStoreAdapter::wait(const std::vector<std::string>& keys,
                            const std::chrono::milliseconds& timeout) {
  Status status = store_.wait(keys, bounded(timeout));
  if (!status.ok()) throw_status(status);
}

}  // namespace gloo_backend
}  // namespace collectives
}  // namespace hora
