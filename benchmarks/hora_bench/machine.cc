// The machine a run is measured on (see machine.h).
#include "benchmarks/hora_bench/machine.h"

#include <unistd.h>

#include <ctime>
#include <fstream>

namespace hora {
namespace bench {

MachineInfo machine_info() {
  MachineInfo m;
  char host[256] = {0};
  if (::gethostname(host, sizeof(host) - 1) == 0) m.hostname = host;
  const long cpus = ::sysconf(_SC_NPROCESSORS_ONLN);
  m.cpus = cpus > 0 ? static_cast<int>(cpus) : 1;
  m.cpu_model = "unknown";
  std::ifstream cpuinfo("/proc/cpuinfo");
  std::string line;
  while (std::getline(cpuinfo, line)) {
    if (line.rfind("model name", 0) == 0) {
      const size_t colon = line.find(':');
      if (colon != std::string::npos) {
        m.cpu_model = line.substr(line.find_first_not_of(' ', colon + 1));
        break;
      }
    }
  }
  return m;
}

std::string utc_timestamp() {
  std::time_t now = std::time(nullptr);
  std::tm tm{};
  gmtime_r(&now, &tm);
  char buf[32];
  std::strftime(buf, sizeof(buf), "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace bench
}  // namespace hora
