// What core/hora.cc's init calls of core/process_sets.cc: the sets given to init.
#pragma once

#include <vector>

#include "core/context.h"
#include "core/process_set_table.h"
#include "hora/process_set.h"
#include "hora/status.h"

namespace hora {

// Registers `ranks` as the next set (collective over the job: core/process_sets.cc).
StatusOr<ProcessSet> register_process_set(Context& context, ProcessSetTable& table,
                                          std::vector<int> ranks);
// InitOptions::process_sets, in order (ids 1, 2, ...); a set given twice is kInvalidArgument.
Status register_initial_process_sets(Context& context, ProcessSetTable& table,
                                     const std::vector<std::vector<int>>& sets);

}  // namespace hora
