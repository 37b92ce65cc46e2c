// InitOptions (hora/types.h) as a Config::Lookup: the settings given in code first, then the
// process environment. Names are checked against the variables hora reads, so a typo is an
// init error naming it instead of a setting silently ignored.
#pragma once

#include "core/config.h"
#include "hora/status.h"
#include "hora/types.h"

namespace hora {

StatusOr<Config::Lookup> make_lookup(const InitOptions& options);

}  // namespace hora
