// The process environment as hora's library reads it: one function, read_env, is the only
// getenv in core/, collectives/, kernels/ and the adapters' C++ (the launcher and the
// benchmarks are programs of their own, each with its own reading point). Everything else takes
// an EnvLookup, so tests feed values without setenv and hora::InitOptions layers settings over
// the environment (core/init_options.h).
//
// Read at init only: Config (core/config.h) and the rank layout (core/layout.h) are parsed
// from it once. read_env is thread-safe as far as getenv is: not concurrently with setenv.
#pragma once

#include <functional>

namespace hora {

// Returns the value of an environment variable, or nullptr when unset.
using EnvLookup = std::function<const char*(const char* name)>;

// getenv(name): the value in the process environment, or nullptr when unset.
const char* read_env(const char* name);

}  // namespace hora
