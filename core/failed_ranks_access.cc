#include "core/failed_ranks_access.h"

#include "collectives/failed_ranks.h"

namespace hora {
namespace detail {

std::vector<int> failed_ranks() { return collectives::FailedRanks::process().ranks(); }

Status failure_status() { return collectives::FailedRanks::process().first_failure(); }

}  // namespace detail
}  // namespace hora
