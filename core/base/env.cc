#include "core/base/env.h"

#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <limits>

namespace hora {
namespace {

std::string lower(std::string s) {
  for (char& c : s) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
  return s;
}

Status bad(const std::string& var, const std::string& value, const std::string& expected) {
  return Status::invalid_argument(var + "='" + value + "' is not valid: expected " + expected);
}

}  // namespace

StatusOr<int64_t> parse_bytes(const std::string& var, const std::string& value) {
  const char* kForm = "a byte count >= 0, e.g. 1048576, 64K, 64M or 1G";
  size_t i = 0;
  while (i < value.size() && std::isdigit(static_cast<unsigned char>(value[i]))) ++i;
  if (i == 0) return bad(var, value, kForm);
  std::string digits = value.substr(0, i);
  std::string suffix = lower(value.substr(i));
  int64_t multiplier = 1;
  if (!suffix.empty()) {
    const char unit = suffix[0];
    std::string rest = suffix.substr(1);
    if (unit == 'k')
      multiplier = int64_t{1} << 10;
    else if (unit == 'm')
      multiplier = int64_t{1} << 20;
    else if (unit == 'g')
      multiplier = int64_t{1} << 30;
    else if (unit == 'b' && rest.empty())
      multiplier = 1;
    else
      return bad(var, value, kForm);
    if (unit != 'b' && !(rest.empty() || rest == "b" || rest == "ib"))
      return bad(var, value, kForm);
  }
  errno = 0;
  char* end = nullptr;
  unsigned long long n = std::strtoull(digits.c_str(), &end, 10);
  if (errno == ERANGE ||
      n > static_cast<unsigned long long>(std::numeric_limits<int64_t>::max() / multiplier))
    return bad(var, value, std::string(kForm) + " (this one overflows int64)");
  return static_cast<int64_t>(n) * multiplier;
}

StatusOr<bool> parse_bool(const std::string& var, const std::string& value) {
  const std::string v = lower(value);
  if (v == "1" || v == "true" || v == "yes" || v == "on") return true;
  if (v == "0" || v == "false" || v == "no" || v == "off") return false;
  return bad(var, value, "one of 1, 0, true, false, yes, no, on, off");
}

StatusOr<int64_t> parse_int(const std::string& var, const std::string& value, int64_t min,
                            int64_t max) {
  const std::string form =
      "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (value.empty()) return bad(var, value, form);
  errno = 0;
  char* end = nullptr;
  long long n = std::strtoll(value.c_str(), &end, 10);
  if (errno == ERANGE || *end != '\0' || std::isspace(static_cast<unsigned char>(value[0])))
    return bad(var, value, form);
  if (n < min || n > max) return bad(var, value, form);
  return static_cast<int64_t>(n);
}

StatusOr<double> parse_double(const std::string& var, const std::string& value, double min,
                              double max) {
  const std::string form = "a number in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  if (value.empty() || std::isspace(static_cast<unsigned char>(value[0])))
    return bad(var, value, form);
  errno = 0;
  char* end = nullptr;
  double d = std::strtod(value.c_str(), &end);
  if (errno == ERANGE || *end != '\0' || !std::isfinite(d) || d < min || d > max)
    return bad(var, value, form);
  return d;
}

}  // namespace hora
