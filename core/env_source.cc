#include "core/env_source.h"

#include <cstdlib>

namespace hora {

const char* read_env(const char* name) { return std::getenv(name); }

}  // namespace hora
