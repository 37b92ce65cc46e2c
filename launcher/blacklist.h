// Blacklist: the hosts of an elastic job that horarun starts no new worker on, because a
// worker there failed (exited non-zero, was killed by a signal, or was named failed by a
// survivor's reset report).
//
// Cooldown (--blacklist-cooldown-range MIN MAX, Horovod's meaning): a host's n-th failure
// blacklists it for min(MAX, MIN * 2^(n-1) + jitter) seconds, the jitter uniform in [0, MIN)
// (so hosts that failed together do not all come back at once); then it is usable again, and
// its failure count stays, so a host that keeps failing stays out longer each time. Without a
// range a failed host stays blacklisted for the rest of the job. Workers already running on a
// blacklisted host are not touched. Times are the caller's monotonic seconds; the jitter comes
// from a caller-given source, so tests are deterministic. Not thread-safe.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>

namespace hora {
namespace launcher {

class Blacklist {
 public:
  // `uniform01` returns a number in [0, 1): the jitter's source.
  Blacklist(std::optional<std::pair<double, double>> cooldown_range,
            std::function<double()> uniform01);

  // Counts one more failure of `host` at `now_s`; returns the seconds it is blacklisted for
  // (infinity without a cooldown range).
  double record_failure(const std::string& host, double now_s);
  bool is_blacklisted(const std::string& host, double now_s) const;
  int failures(const std::string& host) const;
  // The earliest time a blacklisted host comes back, or none (no host on cooldown).
  std::optional<double> next_return(double now_s) const;

 private:
  struct Entry {
    int failures = 0;
    double until_s = 0;  // infinity: for good
  };
  std::optional<std::pair<double, double>> range_;
  std::function<double()> uniform01_;
  std::map<std::string, Entry> hosts_;
};

}  // namespace launcher
}  // namespace hora
