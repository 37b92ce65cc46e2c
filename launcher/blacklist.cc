#include "launcher/blacklist.h"

#include <algorithm>
#include <cmath>
#include <limits>

namespace hora {
namespace launcher {

Blacklist::Blacklist(std::optional<std::pair<double, double>> cooldown_range,
                     std::function<double()> uniform01)
    : range_(cooldown_range), uniform01_(std::move(uniform01)) {}

double Blacklist::record_failure(const std::string& host, double now_s) {
  Entry& e = hosts_[host];
  ++e.failures;
  double cooldown = std::numeric_limits<double>::infinity();
  if (range_) {
    const auto [low, high] = *range_;
    const double backoff = low * std::ldexp(1.0, std::min(e.failures - 1, 30));
    cooldown = std::min(high, backoff + low * uniform01_());
  }
  e.until_s = std::max(e.until_s, now_s + cooldown);
  return cooldown;
}

bool Blacklist::is_blacklisted(const std::string& host, double now_s) const {
  const auto it = hosts_.find(host);
  return it != hosts_.end() && it->second.failures > 0 && now_s < it->second.until_s;
}

int Blacklist::failures(const std::string& host) const {
  const auto it = hosts_.find(host);
  return it == hosts_.end() ? 0 : it->second.failures;
}

std::optional<double> Blacklist::next_return(double now_s) const {
  std::optional<double> next;
  for (const auto& [host, e] : hosts_) {
    if (e.until_s <= now_s || std::isinf(e.until_s)) continue;
    if (!next || e.until_s < *next) next = e.until_s;
  }
  return next;
}

}  // namespace launcher
}  // namespace hora
