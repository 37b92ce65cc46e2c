// validate_parameters and zero_gradients.
#include "examples/trainer/parameter_list.h"

#include <algorithm>
#include <set>
#include <string>

namespace hora {
namespace trainer {

Status validate_parameters(const std::vector<Parameter>& params, const char* who) {
  std::set<std::string> seen;
  for (size_t i = 0; i < params.size(); ++i) {
    const Parameter& p = params[i];
    if (p.name.empty())
      return Status::invalid_argument(std::string(who) + ": parameter " + std::to_string(i) +
                                      " has no name; every parameter needs a unique name");
    if (!seen.insert(p.name).second)
      return Status::invalid_argument(std::string(who) + ": parameter name '" + p.name +
                                      "' appears twice; names must be unique");
    if (p.count < 0 || (p.count > 0 && (p.value == nullptr || p.grad == nullptr)))
      return Status::invalid_argument(std::string(who) + ": parameter '" + p.name + "' has count " +
                                      std::to_string(p.count) +
                                      " and a null value or gradient; expected count >= 0 and "
                                      "both buffers set");
  }
  return Status::OK();
}

void zero_gradients(const std::vector<Parameter>& params) {
  for (const Parameter& p : params) std::fill(p.grad, p.grad + p.count, 0.0f);
}

}  // namespace trainer
}  // namespace hora
