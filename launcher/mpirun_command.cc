#include "launcher/mpirun_command.h"

#include "core/layout.h"

namespace hora {
namespace launcher {

bool is_layout_variable(const std::string& name) { return layout_reads(name); }

std::vector<std::string> exportable_hora_names(const std::vector<std::string>& env) {
  std::vector<std::string> names;
  for (const std::string& entry : env) {
    const std::string name = entry.substr(0, entry.find('='));
    if (name.rfind("HORA_", 0) == 0 && !is_layout_variable(name)) names.push_back(name);
  }
  return names;
}

std::vector<std::string> mpirun_command(const MpirunRequest& r) {
  std::vector<std::string> cmd = {"mpirun", "-np", std::to_string(r.np)};
  if (!r.hosts.empty()) {
    cmd.push_back("-H");
    cmd.push_back(format_host_list(r.hosts));
  }
  if (r.is_root) cmd.push_back("--allow-run-as-root");
  if (r.oversubscribe || (r.all_hosts_local && r.np > r.local_cpus))
    cmd.push_back("--oversubscribe");
  for (const std::string& name : r.env_names) {
    cmd.push_back("-x");
    cmd.push_back(name);
  }
  cmd.push_back("--tag-output");
  cmd.insert(cmd.end(), r.command.begin(), r.command.end());
  return cmd;
}

}  // namespace launcher
}  // namespace hora
