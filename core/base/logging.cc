#include "hora/logging.h"

#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>

#include "core/base/name_table.h"

namespace hora {
namespace {

std::atomic<int> g_level{static_cast<int>(LogLevel::kWarning)};
std::atomic<int> g_rank{-1};

const char kLevelLetters[] = "TDIWE";

constexpr const char* kLevelNames[] = {"trace", "debug", "info", "warning", "error"};
constexpr NameAlias<LogLevel> kLevelAliases[] = {{"warn", LogLevel::kWarning}};
static_assert(std::size(kLevelNames) == static_cast<size_t>(LogLevel::kError) + 1);

void write_all(const std::string& text) {
  const char* p = text.data();
  size_t left = text.size();
  while (left > 0) {
    ssize_t n = ::write(STDERR_FILENO, p, left);
    if (n <= 0) return;
    p += n;
    left -= static_cast<size_t>(n);
  }
}

}  // namespace

StatusOr<LogLevel> parse_log_level(const std::string& text) {
  if (auto level = find_name(kLevelNames, kLevelAliases, text)) return *level;
  return Status::invalid_argument("unknown log level '" + text +
                                  "': expected one of trace, debug, info, warning, error");
}

void set_log_level(LogLevel level) { g_level.store(static_cast<int>(level)); }
LogLevel log_level() { return static_cast<LogLevel>(g_level.load(std::memory_order_relaxed)); }
void set_log_rank(int rank) { g_rank.store(rank); }
bool log_enabled(LogLevel level) {
  return static_cast<int>(level) >= g_level.load(std::memory_order_relaxed);
}

namespace detail {

LogLine::LogLine(LogLevel level, const char* file, int line) : level_(level) {
  const int rank = g_rank.load(std::memory_order_relaxed);
  stream_ << "[hora";
  if (rank >= 0) stream_ << " " << rank;
  stream_ << " " << kLevelLetters[static_cast<int>(level_)];
  if (level_ <= LogLevel::kDebug) {
    const char* base = std::strrchr(file, '/');
    stream_ << " " << (base ? base + 1 : file) << ":" << line;
  }
  stream_ << "] ";
}

LogLine::~LogLine() {
  stream_ << "\n";
  write_all(stream_.str());
}

CheckFailure::CheckFailure(const char* file, int line, const std::string& what) {
  stream_ << "hora: FATAL " << file << ":" << line << ": " << what << " failed ";
}

CheckFailure::~CheckFailure() {
  stream_ << "\n";
  write_all(stream_.str());
  std::abort();
}

}  // namespace detail
}  // namespace hora
