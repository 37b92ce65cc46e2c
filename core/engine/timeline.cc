#include "core/engine/timeline.h"

#include <cerrno>
#include <cstring>

#include <nlohmann/json.hpp>

namespace hora {
namespace engine {

Status Timeline::open(const std::string& path) {
  if (path.empty()) return Status::ok();
  out_.open(path, std::ios::out | std::ios::trunc);
  if (!out_.is_open())
    return Status::io("HORA_TIMELINE='" + path + "': cannot create the file: " +
                      std::strerror(errno));
  origin_ = std::chrono::steady_clock::now();
  out_ << "[\n";
  return Status::ok();
}

int Timeline::thread_of(const std::string& tensor) {
  auto it = threads_.find(tensor);
  if (it != threads_.end()) return it->second;
  const int tid = static_cast<int>(threads_.size()) + 1;
  threads_.emplace(tensor, tid);
  nlohmann::json meta = {{"name", "thread_name"}, {"ph", "M"}, {"pid", 0}, {"tid", tid},
                         {"args", {{"name", tensor}}}};
  out_ << (first_ ? "" : ",\n") << meta.dump();
  first_ = false;
  return tid;
}

void Timeline::event(const std::string& tensor, const char* phase, TimePoint start,
                     TimePoint end) {
  if (!enabled()) return;
  const int tid = thread_of(tensor);
  using us = std::chrono::duration<double, std::micro>;
  nlohmann::json e = {{"name", phase},
                      {"ph", "X"},
                      {"pid", 0},
                      {"tid", tid},
                      {"ts", us(start - origin_).count()},
                      {"dur", us(end - start).count()}};
  out_ << ",\n" << e.dump();
}

void Timeline::close() {
  if (!out_.is_open()) return;
  out_ << "\n]\n";
  out_.close();
}

}  // namespace engine
}  // namespace hora
