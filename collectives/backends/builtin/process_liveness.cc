#include "collectives/backends/builtin/process_liveness.h"

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hora {
namespace collectives {
namespace builtin {

namespace {
// The state letter of /proc/<pid>/stat ('R', 'S', 'T', 'Z', ...), or 0 when it cannot be read.
char process_state(int32_t pid) {
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return 0;
  char buf[512];
  size_t len = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[len] = 0;
  const char* close_paren = std::strrchr(buf, ')');
  return close_paren != nullptr && close_paren[1] != 0 ? close_paren[2] : 0;
}
}  // namespace

bool process_is_gone(int32_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  // A killed child that its parent has not reaped yet is a zombie: gone for our purposes.
  const char state = process_state(pid);
  return state == 'Z' || state == 'X';
}

bool process_may_be_blamed(int32_t pid) {
  if (pid <= 0 || process_is_gone(pid)) return true;
  const char state = process_state(pid);
  return state == 'T' || state == 't' || state == 0;
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
