#include "hora/device.h"

#include <cstdlib>

namespace hora {

std::string Device::to_string() const {
  return is_cpu() ? std::string("cpu") : "cuda:" + std::to_string(index);
}

StatusOr<Device> parse_device(const std::string& text) {
  if (text == "cpu") return Device::cpu();
  if (text == "cuda") return Device::cuda(0);
  if (text.rfind("cuda:", 0) == 0 && text.size() > 5 && text.size() < 15) {
    const std::string digits = text.substr(5);
    bool all_digits = true;
    for (char c : digits) all_digits = all_digits && c >= '0' && c <= '9';
    if (all_digits) return Device::cuda(std::atoi(digits.c_str()));
  }
  return Status::invalid_argument("unknown device '" + text +
                                  "': expected 'cpu', 'cuda' or 'cuda:N' with N >= 0");
}

}  // namespace hora
