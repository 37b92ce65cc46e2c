#include "collectives/backends/builtin/process_liveness.h"

#include <signal.h>

#include <cerrno>
#include <cstdio>
#include <cstring>

namespace hora {
namespace collectives {
namespace builtin {

bool process_is_gone(int32_t pid) {
  if (pid <= 0) return false;
  if (kill(pid, 0) != 0 && errno == ESRCH) return true;
  // A killed child that its parent has not reaped yet is a zombie: gone for our purposes.
  char path[64];
  std::snprintf(path, sizeof path, "/proc/%d/stat", static_cast<int>(pid));
  FILE* f = std::fopen(path, "r");
  if (f == nullptr) return false;
  char buf[512];
  size_t len = std::fread(buf, 1, sizeof buf - 1, f);
  std::fclose(f);
  buf[len] = 0;
  const char* close_paren = std::strrchr(buf, ')');
  return close_paren != nullptr &&
         (close_paren[1] != 0 && (close_paren[2] == 'Z' || close_paren[2] == 'X'));
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
