#include "launcher/shm_cleanup.h"

#include <dirent.h>
#include <unistd.h>

#include <set>

#include "collectives/backends/builtin/shm_segment.h"

namespace hora {
namespace launcher {

int unlink_segments_of(const std::vector<pid_t>& pids, const std::string& dir) {
  if (pids.empty()) return 0;
  const std::string prefix = std::string(collectives::builtin::kShmNamePrefix).substr(1);
  std::set<std::string> owners;
  for (pid_t pid : pids) owners.insert(prefix + std::to_string(pid) + "-");
  DIR* d = ::opendir(dir.c_str());
  if (d == nullptr) return 0;
  std::vector<std::string> doomed;
  while (struct dirent* e = ::readdir(d)) {
    const std::string name = e->d_name;
    const size_t dash = name.find('-', prefix.size());
    if (name.rfind(prefix, 0) != 0 || dash == std::string::npos) continue;
    if (owners.count(name.substr(0, dash + 1))) doomed.push_back(name);
  }
  ::closedir(d);
  int removed = 0;
  for (const std::string& name : doomed) removed += ::unlink((dir + "/" + name).c_str()) == 0;
  return removed;
}

}  // namespace launcher
}  // namespace hora
