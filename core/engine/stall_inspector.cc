#include "core/engine/stall_inspector.h"

#include "hora/logging.h"

namespace hora {
namespace engine {
namespace {

std::string join_ints(const std::vector<int>& v) {
  std::string out;
  for (size_t i = 0; i < v.size(); ++i) {
    if (i) out += ",";
    out += std::to_string(v[i]);
  }
  return out.empty() ? "none" : out;
}

double seconds(std::chrono::steady_clock::duration d) {
  return std::chrono::duration<double>(d).count();
}

}  // namespace

std::string StallInspector::describe(const std::vector<StalledTensor>& stalled, int size,
                                     size_t max_tensors) {
  std::string out;
  for (size_t i = 0; i < stalled.size() && i < max_tensors; ++i) {
    const StalledTensor& t = stalled[i];
    std::vector<int> missing;
    size_t k = 0;
    for (int r = 0; r < size; ++r) {
      if (k < t.ready_ranks.size() && t.ready_ranks[k] == r) {
        ++k;
      } else {
        missing.push_back(r);
      }
    }
    if (i) out += "; ";
    out += "'" + t.name + "' (ready: " + join_ints(t.ready_ranks) +
           "; missing: " + join_ints(missing) + ")";
  }
  if (stalled.size() > max_tensors)
    out += "; and " + std::to_string(stalled.size() - max_tensors) + " more";
  return out;
}

std::string StallInspector::check(const std::vector<StalledTensor>& pending,
                                  std::chrono::steady_clock::time_point now) {
  std::vector<StalledTensor> stalled;
  double oldest = 0;
  for (const StalledTensor& t : pending) {
    const double age = seconds(now - t.first_seen);
    if (age >= warning_s_) {
      stalled.push_back(t);
      if (age > oldest) oldest = age;
    }
  }
  if (stalled.empty()) return "";
  constexpr size_t kShown = 5;
  if (shutdown_s_ > 0 && oldest >= shutdown_s_) {
    return "stalled for " + std::to_string(static_cast<int64_t>(oldest)) +
           " s (HORA_STALL_SHUTDOWN_S=" + std::to_string(shutdown_s_) +
           "): some ranks submitted tensors that others did not: " +
           describe(stalled, size_, kShown);
  }
  if (warnings_ == 0 || seconds(now - last_warning_) >= warning_s_) {
    last_warning_ = now;
    ++warnings_;
    HORA_LOG(kWarning) << "stall: " << stalled.size() << " tensor(s) waiting more than "
                       << warning_s_
                       << " s for other ranks to submit them: " << describe(stalled, size_, kShown)
                       << ". A rank that skips a collective, or submits it under another "
                          "name, hangs the job; set HORA_STALL_SHUTDOWN_S to turn this into "
                          "an error.";
  }
  return "";
}

}  // namespace engine
}  // namespace hora
