// The CPUs a rank may run on (sched_getaffinity, as the launcher left them: every CPU under
// horarun, one core per rank under `mpirun --bind-to core`, a cgroup's share in a container)
// and whether a host's ranks share cores, which decides how the builtin waiters spin
// (spin_budget.h). A rank's own mask alone cannot tell: one CPU each is "a core of its own"
// when the ranks are bound to different cores and "shared" when they are bound to the same one.
// So every local rank publishes its mask and each computes the union.
//
// Pure functions over text; thread-safe.
#pragma once

#include <string>
#include <vector>

namespace hora {
namespace collectives {
namespace builtin {

// This thread's affinity as a comma-separated list of CPU numbers ("0,1"); the online CPUs
// when sched_getaffinity fails.
std::string affinity_text();

// The number of distinct CPUs in the union of `masks` (each affinity_text()'s form; an entry
// that does not parse counts as every online CPU, so a bad mask never claims sharing).
int union_cpus(const std::vector<std::string>& masks);

// Whether `ranks` ranks whose masks' union has `cpus` CPUs share cores: fewer CPUs than ranks.
inline bool ranks_share_cores(int ranks, int cpus) { return cpus < ranks; }

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
