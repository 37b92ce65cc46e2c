// Host lists and rank layout for horarun.
//
// A host list comes from -H "host:slots,host:slots" or from a hostfile (one host a line,
// "host slots=N", "host:N" or a bare "host" meaning one slot; '#' starts a comment). Ranks are
// laid out over the hosts in list order, filling each host's slots before the next, so
// -H a:2,b:2 -np 3 gives ranks 0,1 on a and rank 2 on b. Hosts that get no rank are unused.
//
// Local and cross ranks follow Horovod: local_rank counts the ranks of one host, and the
// ranks with the same local_rank on different hosts form a "cross" group: cross_rank is the
// index of the host among the hosts that have that local rank, cross_size their number.
// Pure functions; thread-safe.
#pragma once

#include <string>
#include <vector>

#include "hora/status.h"

namespace hora {
namespace launcher {

struct HostSlots {
  std::string host;
  int slots = 1;
};

// Parses "a:2,b:4" (a host without ":N" has one slot). Fails on an empty list, an empty host
// name, a slot count that is not a positive integer, or a host named twice.
StatusOr<std::vector<HostSlots>> parse_host_list(const std::string& text);
// Parses the text of a hostfile (see above); `origin` names the file in errors.
StatusOr<std::vector<HostSlots>> parse_hostfile_text(const std::string& text,
                                                     const std::string& origin);
// Reads and parses a hostfile.
StatusOr<std::vector<HostSlots>> read_hostfile(const std::string& path);
// "a:2,b:4": the list in -H form.
std::string format_host_list(const std::vector<HostSlots>& hosts);

// Whether `host` names this machine: localhost, 127.0.0.1, ::1, or this host's name
// (`this_hostname`, as gethostname() returns it, compared also without its domain).
bool is_local_host(const std::string& host, const std::string& this_hostname);
// gethostname(), or "localhost" when it fails.
std::string this_hostname();

struct RankPlacement {
  int rank = 0;
  int size = 1;
  int local_rank = 0;
  int local_size = 1;
  int cross_rank = 0;
  int cross_size = 1;
  std::string host;
  bool is_local = true;  // started directly, not through --rsh
};

// Lays `np` ranks out over `hosts`. Fails (kInvalidArgument) when np < 1 or the hosts have
// fewer than np slots in total; the message names np, the slot count and the list.
StatusOr<std::vector<RankPlacement>> layout_ranks(const std::vector<HostSlots>& hosts, int np,
                                                  const std::string& this_host);

}  // namespace launcher
}  // namespace hora
