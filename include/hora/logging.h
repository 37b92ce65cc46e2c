// Logging with a rank prefix and a level (HORA_LOG_LEVEL), and HORA_CHECK for bugs.
//
// HORA_LOG(kWarning) << "text"; writes one line to stderr: "[hora 3 W] text". The level and
// the rank are process-wide settings, set once at init (set_log_level / set_log_rank); reading
// them is a relaxed atomic load, so logging is safe from any thread. Each line is written with
// one write() call, so lines from threads never interleave.
//
// HORA_CHECK(cond) / HORA_CHECK_EQ(a, b) abort with the values printed: for bugs only, never
// for user or peer input (that is a Status).
#pragma once

#include <sstream>
#include <string>

#include "hora/status.h"

namespace hora {

enum class LogLevel : int { kTrace = 0, kDebug, kInfo, kWarning, kError };

// Parses "trace", "debug", "info", "warning" ("warn"), "error".
StatusOr<LogLevel> parse_log_level(const std::string& text);
void set_log_level(LogLevel level);
LogLevel log_level();
// The rank shown in the prefix; -1 (the default) shows none.
void set_log_rank(int rank);
bool log_enabled(LogLevel level);

namespace detail {

class LogLine {
 public:
  LogLine(LogLevel level, const char* file, int line);
  ~LogLine();
  LogLine(const LogLine&) = delete;
  LogLine& operator=(const LogLine&) = delete;
  std::ostream& stream() { return stream_; }

 private:
  LogLevel level_;
  std::ostringstream stream_;
};

class CheckFailure {
 public:
  CheckFailure(const char* file, int line, const std::string& what);
  [[noreturn]] ~CheckFailure();
  std::ostream& stream() { return stream_; }

 private:
  std::ostringstream stream_;
};

}  // namespace detail
}  // namespace hora

#define HORA_LOG(level)                                \
  if (!::hora::log_enabled(::hora::LogLevel::level)) { \
  } else                                               \
    ::hora::detail::LogLine(::hora::LogLevel::level, __FILE__, __LINE__).stream()

#define HORA_CHECK(cond) \
  if (cond) {            \
  } else                 \
    ::hora::detail::CheckFailure(__FILE__, __LINE__, "HORA_CHECK(" #cond ")").stream()

#define HORA_CHECK_OP(a, b, op)                                                                    \
  if ((a)op(b)) {                                                                                  \
  } else                                                                                           \
    ::hora::detail::CheckFailure(__FILE__, __LINE__, "HORA_CHECK(" #a " " #op " " #b ")").stream() \
        << "(" << (a) << " vs " << (b) << ") "

#define HORA_CHECK_EQ(a, b) HORA_CHECK_OP(a, b, ==)
#define HORA_CHECK_NE(a, b) HORA_CHECK_OP(a, b, !=)
#define HORA_CHECK_LT(a, b) HORA_CHECK_OP(a, b, <)
#define HORA_CHECK_LE(a, b) HORA_CHECK_OP(a, b, <=)
#define HORA_CHECK_GE(a, b) HORA_CHECK_OP(a, b, >=)
