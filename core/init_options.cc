#include "core/init_options.h"

#include <map>
#include <memory>
#include <string>

#include "core/layout.h"

namespace hora {
namespace {

// Every HORA_* variable Config and the rank layout read: their own lists, so a setting
// Config learns is accepted here too.
bool known(const std::string& name) { return config_reads(name) || layout_reads(name); }

}  // namespace

StatusOr<Config::Lookup> make_lookup(const InitOptions& options) {
  auto settings = std::make_shared<std::map<std::string, std::string>>();
  for (const auto& kv : options.settings) {
    if (!known(kv.first))
      return Status::invalid_argument("hora::InitOptions setting '" + kv.first +
                                      "' is not a variable hora reads (expected one of the "
                                      "HORA_* variables listed in docs/configuration.md)");
    (*settings)[kv.first] = kv.second;
  }
  return Config::Lookup([settings](const char* name) -> const char* {
    auto it = settings->find(name);
    if (it != settings->end()) return it->second.c_str();
    return read_env(name);
  });
}

}  // namespace hora
