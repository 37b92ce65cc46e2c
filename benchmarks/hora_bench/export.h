// Machine-readable results: every Measurement of a run as JSON (with the run's settings and
// machine, and p99 and max times beside the median) or CSV (one line per measurement, for
// scripts such as scripts/bench_readme.sh). Written by rank 0 only. Not thread-safe.
#pragma once

#include <string>
#include <vector>

#include "benchmarks/hora_bench/report.h"
#include "benchmarks/hora_bench/runner.h"
#include "hora/status.h"

namespace hora {
namespace bench {

std::string to_json(const RunInfo& info, const std::vector<Measurement>& results);
// Header: collective,ranks,backend,impl,placement,size_bytes,count,type,redop,root,
// time_us,p99_us,max_us,algbw_gbs,busbw_gbs,wrong,available
std::string to_csv(const RunInfo& info, const std::vector<Measurement>& results);

// Writes `text` to `path` (kIo naming the path and errno's text on failure).
Status write_file(const std::string& path, const std::string& text);

}  // namespace bench
}  // namespace hora
