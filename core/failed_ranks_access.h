// The job's ranks this process knows to have failed, for hora's own layers above the runtime
// (the elastic re-initialisation, tests, tools). Not part of the user API. A rank is known
// failed once any wait of this process found it dead or stopped past its deadline, or
// another rank posted so to the job's store and a long wait here read it
// (collectives/failed_ranks.h). The set belongs to the current job generation: hora::init
// (and a re-initialisation) starts it empty; hora::shutdown leaves it readable until the
// next init. Thread-safe; never blocks on communication.
#pragma once

#include <vector>

#include "hora/status.h"

namespace hora {
namespace detail {
// The global ranks known failed, ascending; empty when none (or before any init).
std::vector<int> failed_ranks();
// The error of the first failure found (it names the rank); OK when none.
Status failure_status();
}  // namespace detail
}  // namespace hora
