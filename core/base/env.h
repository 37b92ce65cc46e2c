// Parsers for the values of HORA_* environment variables. Pure functions of strings:
// core/config.cc and core/layout.cc read the environment (read_env, core/env_source.h) and
// use these to validate what they read. Every error names the variable, the value and the
// accepted form.
#pragma once

#include <cstdint>
#include <string>

#include "hora/status.h"

namespace hora {

// A byte count: plain digits, or digits with a K/M/G suffix (binary: K = 1024), optionally
// followed by "B" or "iB" ("64M", "64MiB", "1048576"). Negative values and overflow fail.
StatusOr<int64_t> parse_bytes(const std::string& var, const std::string& value);
// 1/0, true/false, yes/no, on/off (case-insensitive).
StatusOr<bool> parse_bool(const std::string& var, const std::string& value);
// A decimal integer in [min, max].
StatusOr<int64_t> parse_int(const std::string& var, const std::string& value, int64_t min,
                            int64_t max);
// A finite decimal number in [min, max].
StatusOr<double> parse_double(const std::string& var, const std::string& value, double min,
                              double max);

}  // namespace hora
