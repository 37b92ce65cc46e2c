// InitOptions (core/hora.h) as a Config::Lookup: the settings given in code first, then the
// process environment. Names are checked against the variables hora reads, so a typo is an
// init error naming it instead of a setting silently ignored.
#pragma once

#include "core/base/status.h"
#include "core/config.h"
#include "core/hora.h"

namespace hora {

StatusOr<Config::Lookup> make_lookup(const InitOptions& options);

}  // namespace hora
