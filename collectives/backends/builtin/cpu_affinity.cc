#include "collectives/backends/builtin/cpu_affinity.h"

#include <sched.h>
#include <unistd.h>

#include <cstdlib>
#include <set>
#include <sstream>

namespace hora {
namespace collectives {
namespace builtin {
namespace {

long online_cpus() { return std::max(1L, sysconf(_SC_NPROCESSORS_ONLN)); }

}  // namespace

std::string affinity_text() {
  cpu_set_t set;
  CPU_ZERO(&set);
  std::string text;
  if (sched_getaffinity(0, sizeof set, &set) == 0) {
    for (int c = 0; c < CPU_SETSIZE; ++c) {
      if (!CPU_ISSET(c, &set)) continue;
      if (!text.empty()) text += ",";
      text += std::to_string(c);
    }
  }
  if (text.empty()) {
    for (long c = 0; c < online_cpus(); ++c) text += (c == 0 ? "" : ",") + std::to_string(c);
  }
  return text;
}

int union_cpus(const std::vector<std::string>& masks) {
  std::set<long> cpus;
  for (const std::string& mask : masks) {
    std::istringstream in(mask);
    std::string item;
    bool parsed = false;
    while (std::getline(in, item, ',')) {
      char* end = nullptr;
      const long c = std::strtol(item.c_str(), &end, 10);
      if (item.empty() || end == nullptr || *end != '\0' || c < 0) {
        parsed = false;
        break;
      }
      cpus.insert(c);
      parsed = true;
    }
    if (!parsed) return static_cast<int>(std::max<long>(online_cpus(), cpus.size()));
  }
  return static_cast<int>(cpus.size());
}

}  // namespace builtin
}  // namespace collectives
}  // namespace hora
