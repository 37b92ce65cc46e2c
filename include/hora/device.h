// Device: where a tensor's memory lives: the host (cpu) or one CUDA device (cuda:N).
// Plain value; thread-safe.
#pragma once

#include <string>

#include "hora/status.h"

namespace hora {

enum class DeviceKind : uint8_t { kCpu = 0, kCuda };

struct Device {
  DeviceKind kind = DeviceKind::kCpu;
  int index = 0;  // CUDA ordinal; always 0 for cpu

  static Device cpu() { return Device{}; }
  static Device cuda(int index) { return Device{DeviceKind::kCuda, index}; }
  bool is_cpu() const { return kind == DeviceKind::kCpu; }
  bool is_cuda() const { return kind == DeviceKind::kCuda; }
  // "cpu" or "cuda:N".
  std::string to_string() const;
};

inline bool operator==(const Device& a, const Device& b) {
  return a.kind == b.kind && a.index == b.index;
}
inline bool operator!=(const Device& a, const Device& b) { return !(a == b); }

// Parses "cpu", "cuda" (= cuda:0) or "cuda:N" with N >= 0.
StatusOr<Device> parse_device(const std::string& text);

}  // namespace hora
