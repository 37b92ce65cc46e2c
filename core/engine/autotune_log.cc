#include "core/engine/autotune_log.h"

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <vector>

namespace hora {
namespace engine {
namespace {

constexpr int kColumns = 12;

std::vector<std::string> split_csv(const std::string& line) {
  std::vector<std::string> out(1);
  for (char ch : line) {
    if (ch == ',') {
      out.emplace_back();
    } else if (ch != '\r') {
      out.back() += ch;
    }
  }
  return out;
}

bool parse_int64(const std::string& s, int64_t* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  errno = 0;
  const long long v = std::strtoll(s.c_str(), &end, 10);
  if (errno != 0 || *end != '\0') return false;
  *out = v;
  return true;
}

bool parse_real(const std::string& s, double* out) {
  if (s.empty()) return false;
  char* end = nullptr;
  const double v = std::strtod(s.c_str(), &end);
  if (*end != '\0') return false;
  *out = v;
  return true;
}

bool parse_flag(const std::string& s, bool* out) {
  if (s != "0" && s != "1") return false;
  *out = s == "1";
  return true;
}

}  // namespace

const char* autotune_csv_header() {
  return "hierarchical_allreduce,hierarchical_allgather,torus_allreduce,cache_enabled,"
         "cycle_time_ms,tensor_fusion_threshold,score,sample,step,window_steps,windows,"
         "algorithms";
}

std::string autotune_csv_row(const AutotuneRow& row) {
  char buf[256];
  std::snprintf(buf, sizeof buf, "%d,%d,0,%d,%.6g,%lld,%.6g,", row.values.hierarchical_allreduce,
                row.values.hierarchical_allgather, row.values.cache_enabled,
                row.values.cycle_time_ms, static_cast<long long>(row.values.fusion_threshold_bytes),
                row.score);
  std::string line = buf;
  line += row.sample < 0 ? std::string("best") : std::to_string(row.sample);
  line += "," + std::to_string(row.step) + "," + std::to_string(row.window_steps) + "," +
          std::to_string(row.windows) + ",";
  for (char ch : row.algorithms) line += ch == ',' ? ';' : ch;
  return line;
}

StatusOr<AutotuneRow> parse_autotune_csv_row(const std::string& line) {
  const std::vector<std::string> f = split_csv(line);
  if (f.size() != kColumns)
    return Status::invalid_argument("autotune log row '" + line + "': expected " +
                                    std::to_string(kColumns) + " comma-separated columns, got " +
                                    std::to_string(f.size()));
  AutotuneRow row;
  bool torus = false;
  int64_t window_steps = 0, windows = 0;
  const bool ok =
      parse_flag(f[0], &row.values.hierarchical_allreduce) &&
      parse_flag(f[1], &row.values.hierarchical_allgather) && parse_flag(f[2], &torus) &&
      parse_flag(f[3], &row.values.cache_enabled) && parse_real(f[4], &row.values.cycle_time_ms) &&
      parse_int64(f[5], &row.values.fusion_threshold_bytes) && parse_real(f[6], &row.score) &&
      (f[7] == "best" || parse_int64(f[7], &row.sample)) && parse_int64(f[8], &row.step) &&
      parse_int64(f[9], &window_steps) && parse_int64(f[10], &windows);
  if (!ok || row.values.cycle_time_ms < 0 || row.values.fusion_threshold_bytes < 0)
    return Status::invalid_argument(
        "autotune log row '" + line +
        "': expected 0/1 flags, a cycle time in ms >= 0, a fusion threshold in bytes >= 0 and "
        "numbers for score, sample (or 'best'), step, window_steps and windows");
  if (f[7] == "best") row.sample = -1;
  row.window_steps = static_cast<int>(window_steps);
  row.windows = static_cast<int>(windows);
  row.algorithms = f[11];
  return row;
}

StatusOr<AutotuneRow> read_autotune_best(const std::string& path) {
  std::ifstream in(path);
  if (!in)
    return Status::invalid_argument("HORA_AUTOTUNE_FROM='" + path +
                                    "': cannot read it: " + std::strerror(errno));
  std::string header, line, last;
  std::getline(in, header);
  if (!header.empty() && header.back() == '\r') header.pop_back();
  if (header != autotune_csv_header())
    return Status::invalid_argument("HORA_AUTOTUNE_FROM='" + path +
                                    "': expected an autotune log (HORA_AUTOTUNE_LOG) whose "
                                    "first line is '" +
                                    autotune_csv_header() + "'");
  while (std::getline(in, line))
    if (!line.empty()) last = line;
  if (last.empty())
    return Status::invalid_argument("HORA_AUTOTUNE_FROM='" + path + "': the log has no row");
  StatusOr<AutotuneRow> row = parse_autotune_csv_row(last);
  if (!row.ok()) return row.status().with_context(" (HORA_AUTOTUNE_FROM='" + path + "')");
  return row;
}

AutotuneLogWriter::~AutotuneLogWriter() { close(); }

Status AutotuneLogWriter::open(const std::string& path) {
  close();
  file_ = std::fopen(path.c_str(), "w");
  if (file_ == nullptr)
    return Status::invalid_argument("HORA_AUTOTUNE_LOG='" + path +
                                    "': cannot create it: " + std::strerror(errno));
  std::fprintf(file_, "%s\n", autotune_csv_header());
  std::fflush(file_);
  return Status::OK();
}

void AutotuneLogWriter::write(const AutotuneRow& row) {
  if (file_ == nullptr) return;
  std::fprintf(file_, "%s\n", autotune_csv_row(row).c_str());
  std::fflush(file_);
}

void AutotuneLogWriter::close() {
  if (file_ != nullptr) std::fclose(file_);
  file_ = nullptr;
}

}  // namespace engine
}  // namespace hora
