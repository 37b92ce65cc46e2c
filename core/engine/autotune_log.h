// The autotuner's samples as CSV (HORA_AUTOTUNE_LOG) and the best row read back
// (HORA_AUTOTUNE_FROM).
//
// Columns: Horovod's autotune log's first, so a script written for HOROVOD_AUTOTUNE_LOG reads
// it (hierarchical_allreduce, hierarchical_allgather, torus_allreduce, cache_enabled,
// cycle_time_ms, tensor_fusion_threshold in bytes, score in bytes reduced per second), then
// hora's own: sample (its number, or "best" on the last row, which repeats the chosen sample),
// step (the training step the sample ended at), window_steps and windows (the median was
// taken over `windows` windows of `window_steps` steps each) and algorithms (the allreduce
// algorithm fixed per size class so far, "2^14:ring 2^20:rd", empty while none is).
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "hora/status.h"

namespace hora {
namespace engine {

// The knobs the autotuner sets.
struct AutotuneValues {
  int64_t fusion_threshold_bytes = int64_t{64} << 20;
  double cycle_time_ms = 1.0;
  bool cache_enabled = true;
  bool hierarchical_allreduce = false;
  bool hierarchical_allgather = false;

  bool operator==(const AutotuneValues& o) const {
    return fusion_threshold_bytes == o.fusion_threshold_bytes && cycle_time_ms == o.cycle_time_ms &&
           cache_enabled == o.cache_enabled && hierarchical_allreduce == o.hierarchical_allreduce &&
           hierarchical_allgather == o.hierarchical_allgather;
  }
};

// One row of the log.
struct AutotuneRow {
  AutotuneValues values;
  double score = 0;     // bytes reduced per second (median of the windows)
  int64_t sample = -1;  // -1: the best row
  int64_t step = 0;
  int window_steps = 0;
  int windows = 0;
  std::string algorithms;
};

// The header line (no newline).
const char* autotune_csv_header();
// One row as a CSV line (no newline).
std::string autotune_csv_row(const AutotuneRow& row);
// Parses one data line under the header. Fails naming the line and what is wrong.
StatusOr<AutotuneRow> parse_autotune_csv_row(const std::string& line);
// The last row of the log at `path` (the best one when the run finished tuning). Fails when
// the file cannot be read, its header is not the log's, or it has no row.
StatusOr<AutotuneRow> read_autotune_best(const std::string& path);

// Writes rows to a file as they come (flushed each), header first. Not thread-safe.
class AutotuneLogWriter {
 public:
  AutotuneLogWriter() = default;
  ~AutotuneLogWriter();
  AutotuneLogWriter(const AutotuneLogWriter&) = delete;
  AutotuneLogWriter& operator=(const AutotuneLogWriter&) = delete;
  // Creates (truncates) `path` and writes the header.
  Status open(const std::string& path);
  bool is_open() const { return file_ != nullptr; }
  void write(const AutotuneRow& row);
  void close();

 private:
  std::FILE* file_ = nullptr;
};

}  // namespace engine
}  // namespace hora
