// The ratio column and the table's shape (columns of nccl-tests, one line per size).
#include "benchmarks/hora_bench/report.h"

#include <gtest/gtest.h>

#include <algorithm>

#include "benchmarks/hora_bench/export.h"
#include "benchmarks/hora_bench/runner.h"

namespace hora {
namespace bench {
namespace {

Measurement m(const std::string& impl, bool is_hora, double busbw, bool in_place = false) {
  Measurement x;
  x.impl = impl;
  x.is_hora = is_hora;
  x.busbw_gbs = busbw;
  x.algbw_gbs = busbw;
  x.median_us = 10;
  x.size_bytes = 1 << 20;
  x.count = 1 << 18;
  x.in_place = in_place;
  return x;
}

TEST(ReportTest, RatioIsHoraOverBestBaseline) {
  EXPECT_DOUBLE_EQ(hora_ratio({m("hora", true, 6), m("hora-ring", true, 9), m("gloo", false, 1.5),
                               m("mpi", false, 3)}),
                   2.0);
  EXPECT_EQ(hora_ratio({m("hora", true, 6), m("hora-ring", true, 9)}), 0);
  Measurement off = m("mpi", false, 100);
  off.available = false;
  EXPECT_DOUBLE_EQ(hora_ratio({m("hora", true, 6), off, m("gloo", false, 3)}), 2.0);
}

TEST(ReportTest, WireColumnIsABoundNotABaseline) {
  Measurement wire = m("wire", false, 12);
  wire.is_reference = true;
  EXPECT_DOUBLE_EQ(hora_ratio({m("hora", true, 6), wire, m("gloo", false, 3)}), 2.0);
  EXPECT_EQ(hora_ratio({m("hora", true, 6), wire}), 0);
}

// auto/algo: the fastest fixed hora algorithm's time over auto's; the choice is reported.
TEST(ReportTest, AutoIsComparedWithHorasOwnAlgorithms) {
  auto timed = [](const std::string& impl, double us, const std::string& choice) {
    Measurement x = m(impl, true, 1);
    x.median_us = us;
    x.choice = choice;
    return x;
  };
  std::string choice;
  EXPECT_DOUBLE_EQ(auto_ratio({timed("hora", 10, "rd"), timed("hora-ring", 20, ""),
                               timed("hora-rd", 9, ""), m("gloo", false, 5)},
                              &choice),
                   0.9);
  EXPECT_EQ(choice, "rd");
  EXPECT_EQ(auto_ratio({timed("hora", 10, "rd"), m("gloo", false, 5)}, nullptr), 0);
  RunInfo info;
  info.ranks = 2;
  info.impls = {"hora", "hora-native"};
  info.options.compare = {"hora"};
  Reporter r(info);
  EXPECT_NE(r.header().find("auto/algo"), std::string::npos) << r.header();
  const std::string line = r.add_row({timed("hora", 8, "native"), timed("hora-native", 4, "")});
  EXPECT_NE(line.find("native"), std::string::npos) << line;
  EXPECT_NE(line.find("0.50x"), std::string::npos) << line;
  EXPECT_NE(r.footer().find(">= 0.90x at 0 of 1 sizes; worst 0.50x at 1048576 B"),
            std::string::npos)
      << r.footer();
}

TEST(ReportTest, AutoRatioWithRoundsIsTheMedianOfSideBySideRatios) {
  const auto timed = [](const std::string& impl, std::vector<double> rounds,
                        const std::string& choice) {
    Measurement x = m(impl, true, 1);
    x.round_median_us = rounds;
    std::vector<double> sorted = rounds;
    std::sort(sorted.begin(), sorted.end());
    x.median_us = sorted[sorted.size() / 2];
    x.choice = choice;
    return x;
  };
  // The machine slowed 5x in rounds 2-4, for auto first: pooled medians would read 0.2x,
  // but within every round auto is as fast as native, or 5% slower.
  const Measurement automatic = timed("hora", {1.0, 5.0, 5.0, 5.25, 1.05}, "native");
  const Measurement native = timed("hora-native", {1.0, 1.0, 5.0, 5.0, 1.0}, "");
  const Measurement ring = timed("hora-ring", {2.0, 2.0, 9.0, 9.0, 2.0}, "");
  std::string choice;
  EXPECT_NEAR(auto_ratio({automatic, ring, native}, &choice), 1.0 / 1.05, 1e-12);
  EXPECT_EQ(choice, "native");
  // Against the fastest over all rounds (native), not each round's own fastest.
  const Measurement rd = timed("hora-rd", {0.5, 9.0, 9.0, 9.0, 9.0}, "");
  EXPECT_NEAR(auto_ratio({automatic, native, rd}, nullptr), 1.0 / 1.05, 1e-12);
  // Round counts that differ (or one round): the pooled medians.
  Measurement one_round = native;
  one_round.round_median_us = {};
  EXPECT_DOUBLE_EQ(auto_ratio({automatic, one_round}, nullptr), 1.0 / 5.0);
}

TEST(ReportTest, SingleTableHasBothPlacementsOnOneLine) {
  RunInfo info;
  info.ranks = 2;
  info.impls = {"hora"};
  Reporter r(info);
  const std::string header = r.header();
  for (const char* col : {"size(B)", "count", "type", "redop", "root", "time(us)", "algbw", "busbw",
                          "#wrong", "out-of-place", "in-place"}) {
    EXPECT_NE(header.find(col), std::string::npos) << col;
  }
  EXPECT_EQ(r.add_row({m("hora", true, 5)}), "");
  const std::string line = r.add_row({m("hora", true, 4, true)});
  EXPECT_NE(line.find("1048576"), std::string::npos) << line;
  EXPECT_EQ(line.back(), '\n');
  EXPECT_NE(r.footer().find("Avg bus bandwidth    : 4.500"), std::string::npos) << r.footer();
}

TEST(ReportTest, WrongResultsShowInFooterAndCsv) {
  RunInfo info;
  info.ranks = 2;
  info.impls = {"hora", "gloo-ring"};
  Reporter r(info);
  Measurement bad = m("gloo-ring", false, 1);
  bad.wrong = 3;
  const std::string line = r.add_row({m("hora", true, 5), bad});
  EXPECT_NE(line.find("5.00x"), std::string::npos) << line;
  EXPECT_EQ(r.total_wrong(), 3);
  EXPECT_NE(r.footer().find("FAILED"), std::string::npos);
  const std::string csv = to_csv(info, {m("hora", true, 5), bad});
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_NE(csv.find("gloo-ring,out-of-place,1048576"), std::string::npos) << csv;
}

}  // namespace
}  // namespace bench
}  // namespace hora
