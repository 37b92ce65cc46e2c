// JSON and CSV output (see export.h).
#include "benchmarks/hora_bench/export.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>
#include <sstream>

namespace hora {
namespace bench {

std::string to_json(const RunInfo& info, const std::vector<Measurement>& results) {
  const Options& o = info.options;
  nlohmann::json j;
  j["collective"] = collective_name(o.collective);
  j["ranks"] = info.ranks;
  j["backend"] = info.backend;
  j["launcher"] = info.launcher;
  j["timestamp"] = info.timestamp;
  j["machine"] = {{"hostname", info.machine.hostname},
                  {"cpus", info.machine.cpus},
                  {"cpu_model", info.machine.cpu_model}};
  j["settings"] = {{"min_bytes", o.min_bytes},
                   {"max_bytes", o.max_bytes},
                   {"step_factor", o.step_factor},
                   {"step_bytes", o.step_bytes},
                   {"dtype", data_type_name(o.dtype)},
                   {"op", is_reduction(o.collective) ? reduce_op_name(o.op) : "none"},
                   {"root", o.root},
                   {"iters", o.iters},
                   {"warmup", o.warmup},
                   {"check", o.check},
                   {"algo", collectives::algorithm_name(o.algo)}};
  j["implementations"] = info.impls;
  nlohmann::json rows = nlohmann::json::array();
  for (const Measurement& m : results) {
    nlohmann::json r = {{"impl", m.impl},
                        {"is_hora", m.is_hora},
                        {"is_reference", m.is_reference},
                        {"placement", m.in_place ? "in-place" : "out-of-place"},
                        {"size_bytes", m.size_bytes},
                        {"count", m.count},
                        {"available", m.available}};
    if (m.available) {
      r["time_us"] = m.median_us;
      r["p99_us"] = m.p99_us;
      r["max_us"] = m.max_us;
      r["iterations"] = m.iterations;
      if (!m.round_median_us.empty()) r["round_time_us"] = m.round_median_us;
      r["algbw_gbs"] = m.algbw_gbs;
      r["busbw_gbs"] = m.busbw_gbs;
      r["wrong"] = m.wrong;
    } else {
      r["note"] = m.note;
    }
    rows.push_back(r);
  }
  j["results"] = rows;
  return j.dump(2) + "\n";
}

std::string to_csv(const RunInfo& info, const std::vector<Measurement>& results) {
  const Options& o = info.options;
  std::ostringstream csv;
  csv << "collective,ranks,backend,impl,placement,size_bytes,count,type,redop,root,time_us,"
         "p99_us,max_us,algbw_gbs,busbw_gbs,wrong,available\n";
  for (const Measurement& m : results) {
    char nums[160];
    std::snprintf(nums, sizeof(nums), "%.3f,%.3f,%.3f,%.4f,%.4f", m.median_us, m.p99_us, m.max_us,
                  m.algbw_gbs, m.busbw_gbs);
    csv << collective_name(o.collective) << "," << info.ranks << "," << info.backend << ","
        << m.impl << "," << (m.in_place ? "in-place" : "out-of-place") << "," << m.size_bytes << ","
        << m.count << "," << data_type_name(o.dtype) << ","
        << (is_reduction(o.collective) ? reduce_op_name(o.op) : "none") << ","
        << (has_root(o.collective) ? o.root : -1) << "," << nums << "," << m.wrong << ","
        << (m.available ? 1 : 0) << "\n";
  }
  return csv.str();
}

Status write_file(const std::string& path, const std::string& text) {
  std::FILE* f = std::fopen(path.c_str(), "w");
  if (f == nullptr) {
    return Status::io("cannot write " + path + ": " + std::strerror(errno));
  }
  const size_t written = std::fwrite(text.data(), 1, text.size(), f);
  const int closed = std::fclose(f);
  if (written != text.size() || closed != 0) {
    return Status::io("writing " + path + " failed: " + std::strerror(errno));
  }
  return Status::OK();
}

}  // namespace bench
}  // namespace hora
