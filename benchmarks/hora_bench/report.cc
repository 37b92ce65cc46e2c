// The rank-0 table (see report.h).
#include "benchmarks/hora_bench/report.h"

#include <algorithm>
#include <cstdio>
#include <map>
#include <sstream>
#include <utility>

#include "benchmarks/hora_bench/size_parse.h"

namespace hora {
namespace bench {
namespace {

std::string fmt(const char* format, double v) {
  char buf[64];
  std::snprintf(buf, sizeof(buf), format, v);
  return buf;
}

std::string pad(const std::string& s, size_t width) {
  return s.size() >= width ? s : std::string(width - s.size(), ' ') + s;
}

// An implementation's time column: wide enough for its "<name>:us" header and a space.
size_t time_width(const std::string& impl) { return std::max<size_t>(14, impl.size() + 4); }

std::string time_text(double us) { return us >= 1e4 ? fmt("%.0f", us) : fmt("%.2f", us); }

std::string wrong_text(const Measurement& m) {
  if (!m.available) return "n/a";
  return m.wrong < 0 ? "N/A" : std::to_string(m.wrong);
}

std::string redop_text(const Options& o) {
  return is_reduction(o.collective) ? reduce_op_name(o.op) : "none";
}

std::string root_text(const Options& o) {
  return has_root(o.collective) ? std::to_string(o.root) : "-1";
}

std::string lead_columns(const Options& o, const Measurement& m) {
  return pad(std::to_string(m.size_bytes), 12) + pad(std::to_string(m.count), 12) +
         pad(data_type_name(o.dtype), 9) + pad(redop_text(o), 8) + pad(root_text(o), 6);
}

}  // namespace

double hora_ratio(const std::vector<Measurement>& row) {
  const Measurement* hora = nullptr;
  double best_other = 0;
  for (const Measurement& m : row) {
    if (m.is_hora && hora == nullptr) hora = &m;
    if (!m.is_hora && !m.is_reference && m.available && m.busbw_gbs > best_other)
      best_other = m.busbw_gbs;
  }
  if (hora == nullptr || !hora->available || best_other <= 0) return 0;
  return hora->busbw_gbs / best_other;
}

double auto_ratio(const std::vector<Measurement>& row, std::string* choice) {
  const Measurement* chosen = nullptr;
  const Measurement* best_m = nullptr;  // the fastest fixed algorithm over all rounds
  for (const Measurement& m : row) {
    if (!m.is_hora || !m.available) continue;
    if (!m.choice.empty() && chosen == nullptr) {
      chosen = &m;
    } else if (m.choice.empty() && m.median_us > 0 &&
               (best_m == nullptr || m.median_us < best_m->median_us)) {
      best_m = &m;
    }
  }
  if (chosen == nullptr || best_m == nullptr || chosen->median_us <= 0) return 0;
  if (choice != nullptr) *choice = chosen->choice;
  const std::vector<double>& a = chosen->round_median_us;
  const std::vector<double>& b = best_m->round_median_us;
  if (a.size() < 2 || a.size() != b.size()) return best_m->median_us / chosen->median_us;
  // Each round's ratio, then their median: a drift of the machine's speed between rounds
  // (or within one) moves one round's ratio, not the result.
  std::vector<double> ratios;
  for (size_t r = 0; r < a.size(); ++r) {
    if (a[r] > 0) ratios.push_back(b[r] / a[r]);
  }
  return ratios.empty() ? 0 : time_stats(std::move(ratios)).median_us;
}

Reporter::Reporter(RunInfo info) : info_(std::move(info)) {}

std::string Reporter::header() const {
  const Options& o = info_.options;
  std::ostringstream h;
  h << "# hora-bench " << collective_name(o.collective) << ": " << info_.ranks << " ranks ("
    << info_.launcher << "), hora's algorithms over " << info_.backend << "\n";
  h << "# machine: " << info_.machine.hostname << ", " << info_.machine.cpus << " cpus, "
    << info_.machine.cpu_model << "; " << info_.timestamp << "\n";
  h << "# sizes " << format_size(o.min_bytes) << " .. " << format_size(o.max_bytes);
  if (o.step_bytes != 0) {
    h << " (+" << format_size(o.step_bytes) << ")";
  } else {
    h << " (x" << o.step_factor << ")";
  }
  h << ", dtype " << data_type_name(o.dtype) << ", op " << redop_text(o) << ", iters " << o.iters
    << ", warmup " << o.warmup << ", check " << (o.check ? 1 : 0) << ", algo "
    << collectives::algorithm_name(o.algo);
  if (o.rounds > 1) h << ", rounds " << o.rounds;
  if (o.min_ms > 0) h << ", at least " << o.min_ms << " ms per round";
  if (o.load_threads > 0) h << ", load " << o.load_threads << " busy thread(s) per rank";
  h << "\n";
  h << "# time: median over iterations (slowest rank); algbw, busbw: decimal GB/s\n#\n";
  if (!is_compare()) {
    h << "#" << pad("", 46) << pad("out-of-place", 30) << pad("in-place", 36) << "\n";
    h << "#" << pad("size(B)", 11) << pad("count", 12) << pad("type", 9) << pad("redop", 8)
      << pad("root", 6);
    for (int k = 0; k < 2; ++k) {
      h << pad("time(us)", 10) << pad("algbw", 8) << pad("busbw", 8) << pad("#wrong", 8);
    }
    h << "\n";
  } else {
    h << "# out-of-place; per implementation: time(us) busbw(GB/s)\n";
    h << "#" << pad("size(B)", 11) << pad("count", 12) << pad("type", 9) << pad("redop", 8)
      << pad("root", 6);
    for (const std::string& name : info_.impls) {
      h << pad(name + ":us", time_width(name)) << pad("busbw", 7);
    }
    h << pad("#wrong", 8) << pad("hora/best", 10);
    if (has_auto_ratio()) h << pad("auto", 14) << pad("auto/algo", 10);
    h << "\n";
  }
  return h.str();
}

bool Reporter::has_auto_ratio() const {
  return is_compare() && info_.options.collective == Collective::kAllreduce &&
         info_.options.algo == collectives::Algorithm::kAuto;
}

std::string Reporter::add_row(const std::vector<Measurement>& row) {
  if (has_auto_ratio()) {
    std::string choice;
    const double a = auto_ratio(row, &choice);
    if (a > 0) auto_ratios_.push_back({row.empty() ? 0 : row.front().size_bytes, a});
  }
  for (const Measurement& m : row) {
    if (m.wrong > 0) total_wrong_ += m.wrong;
    all_.push_back(m);
  }
  if (is_compare()) return compare_line(row);
  if (!row.empty() && !row.front().in_place) {
    pending_ = row;
    return "";
  }
  std::string line = single_line(pending_, row);
  pending_.clear();
  return line;
}

std::string Reporter::single_line(const std::vector<Measurement>& oop,
                                  const std::vector<Measurement>& ip) const {
  if (oop.empty() || ip.empty()) return "";
  std::string line = " " + lead_columns(info_.options, oop.front());
  for (const Measurement* m : {&oop.front(), &ip.front()}) {
    if (!m->available) {
      line += pad("n/a", 10) + pad("n/a", 8) + pad("n/a", 8) + pad("n/a", 8);
      continue;
    }
    line += pad(time_text(m->median_us), 10) + pad(fmt("%.2f", m->algbw_gbs), 8) +
            pad(fmt("%.2f", m->busbw_gbs), 8) + pad(wrong_text(*m), 8);
  }
  return line + "\n";
}

std::string Reporter::compare_line(const std::vector<Measurement>& row) const {
  if (row.empty()) return "";
  std::string line = " " + lead_columns(info_.options, row.front());
  int64_t wrong = 0;
  bool checked = false;
  for (const Measurement& m : row) {
    if (!m.available) {
      line += pad("n/a", time_width(m.impl)) + pad("n/a", 7);
      continue;
    }
    line += pad(time_text(m.median_us), time_width(m.impl)) + pad(fmt("%.2f", m.busbw_gbs), 7);
    if (m.wrong >= 0) {
      wrong += m.wrong;
      checked = true;
    }
  }
  line += pad(checked ? std::to_string(wrong) : "N/A", 8);
  const double ratio = hora_ratio(row);
  line += pad(ratio > 0 ? fmt("%.2fx", ratio) : "-", 10);
  if (has_auto_ratio()) {
    std::string choice;
    const double a = auto_ratio(row, &choice);
    line += pad(choice.empty() ? "-" : choice, 14) + pad(a > 0 ? fmt("%.2fx", a) : "-", 10);
  }
  return line + "\n";
}

std::string Reporter::footer() const {
  // The average busbw of each implementation over every measurement it ran.
  std::map<std::string, std::pair<double, int>> sums;
  for (const Measurement& m : all_) {
    if (!m.available) continue;
    auto& s = sums[m.impl];
    s.first += m.busbw_gbs;
    s.second += 1;
  }
  std::ostringstream f;
  for (const std::string& name : info_.impls) {
    auto it = sums.find(name);
    const double avg =
        (it == sums.end() || it->second.second == 0) ? 0 : it->second.first / it->second.second;
    f << "# Avg bus bandwidth    : " << fmt("%.3f", avg);
    if (is_compare()) f << "  (" << name << ")";
    f << "\n";
  }
  if (!auto_ratios_.empty()) {
    // Target of the selector: auto within 10% of hora's best algorithm at every size.
    int within = 0;
    auto worst = auto_ratios_.front();
    for (const auto& r : auto_ratios_) {
      if (r.second >= 0.9) ++within;
      if (r.second < worst.second) worst = r;
    }
    f << "# auto/algo            : >= 0.90x at " << within << " of " << auto_ratios_.size()
      << " sizes; worst " << fmt("%.2fx", worst.second) << " at " << worst.first << " B\n";
  }
  f << "# Total #wrong         : " << total_wrong_ << (total_wrong_ == 0 ? " OK" : " FAILED")
    << "\n";
  return f.str();
}

}  // namespace bench
}  // namespace hora
