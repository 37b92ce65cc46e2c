// Parsing and printing of byte sizes with K/M/G suffixes (see size_parse.h).
#include "benchmarks/hora_bench/size_parse.h"

#include <cctype>
#include <cstdint>
#include <cstdio>
#include <limits>

namespace hora {
namespace bench {

StatusOr<size_t> parse_size(const std::string& text, const std::string& what) {
  auto bad = [&](const std::string& why) {
    return Status::invalid_argument(what + " '" + text + "': " + why +
                                    " (expected a byte count such as 8, 64K, 1M or 4G)");
  };
  if (text.empty()) return bad("empty size");
  size_t pos = 0;
  uint64_t value = 0;
  while (pos < text.size() && std::isdigit(static_cast<unsigned char>(text[pos]))) {
    const uint64_t digit = static_cast<uint64_t>(text[pos] - '0');
    if (value > (std::numeric_limits<uint64_t>::max() - digit) / 10) return bad("too large");
    value = value * 10 + digit;
    ++pos;
  }
  if (pos == 0) return bad(text[0] == '-' ? "negative size" : "not a number");
  std::string suffix = text.substr(pos);
  for (char& c : suffix) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  int shift = 0;
  if (!suffix.empty()) {
    switch (suffix[0]) {
      case 'K': shift = 10; break;
      case 'M': shift = 20; break;
      case 'G': shift = 30; break;
      case 'B': shift = 0; break;
      default: return bad("unknown suffix '" + text.substr(pos) + "'");
    }
    const std::string rest = suffix.substr(1);
    const bool is_unit =
        suffix[0] == 'B' ? rest.empty() : (rest.empty() || rest == "B" || rest == "IB");
    if (!is_unit) return bad("unknown suffix '" + text.substr(pos) + "'");
  }
  if (shift > 0 && value > (std::numeric_limits<uint64_t>::max() >> shift)) return bad("too large");
  value <<= shift;
  if (value > std::numeric_limits<size_t>::max()) return bad("too large");
  return static_cast<size_t>(value);
}

namespace {

std::string format_with_units(size_t bytes, const char* const units[4], bool compact) {
  int unit = 0;
  double value = static_cast<double>(bytes);
  while (unit < 3 && value >= 1024.0) {
    value /= 1024.0;
    ++unit;
  }
  char buf[48];
  const bool whole = value == static_cast<double>(static_cast<uint64_t>(value));
  if (whole) {
    std::snprintf(buf, sizeof(buf), compact ? "%.0f%s" : "%.0f %s", value, units[unit]);
  } else {
    std::snprintf(buf, sizeof(buf), compact ? "%.1f%s" : "%.1f %s", value, units[unit]);
  }
  return buf;
}

}  // namespace

std::string format_size(size_t bytes) {
  static const char* const kUnits[4] = {"B", "KiB", "MiB", "GiB"};
  return format_with_units(bytes, kUnits, false);
}

std::string format_size_short(size_t bytes) {
  static const char* const kUnits[4] = {"", "K", "M", "G"};
  return format_with_units(bytes, kUnits, true);
}

}  // namespace bench
}  // namespace hora
