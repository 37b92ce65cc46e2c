// The SVG writer: a well-formed XML document (every element closed, properly nested, text
// escaped) with one polyline and one legend entry per series.
#include "benchmarks/hora_bench/svg_plot.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

namespace hora {
namespace bench {
namespace {

// A minimal XML well-formedness check: tags balance and nest, attribute values are quoted,
// and no raw '<' or '&' appears in text. Returns "" when well formed, else what is wrong.
std::string xml_problem(const std::string& xml) {
  std::vector<std::string> open;
  size_t i = 0;
  if (xml.rfind("<?xml", 0) == 0) i = xml.find("?>") + 2;
  while (i < xml.size()) {
    if (xml[i] == '&') {
      const size_t semi = xml.find(';', i);
      if (semi == std::string::npos || semi - i > 6) return "raw & at " + std::to_string(i);
      i = semi + 1;
      continue;
    }
    if (xml[i] != '<') {
      ++i;
      continue;
    }
    const size_t end = xml.find('>', i);
    if (end == std::string::npos) return "unterminated tag";
    std::string tag = xml.substr(i + 1, end - i - 1);
    // Quotes must balance inside a tag.
    size_t quotes = 0;
    for (char c : tag) quotes += c == '"';
    if (quotes % 2 != 0) return "unbalanced quotes in <" + tag + ">";
    if (tag.find('<') != std::string::npos) return "'<' inside a tag";
    if (!tag.empty() && tag[0] == '/') {
      const std::string name = tag.substr(1);
      if (open.empty() || open.back() != name) return "mismatched </" + name + ">";
      open.pop_back();
    } else if (!tag.empty() && tag.back() != '/') {
      open.push_back(tag.substr(0, tag.find_first_of(" \n\t")));
    }
    i = end + 1;
  }
  return open.empty() ? "" : "unclosed <" + open.back() + ">";
}

size_t occurrences(const std::string& text, const std::string& needle) {
  size_t n = 0;
  for (size_t at = text.find(needle); at != std::string::npos; at = text.find(needle, at + 1)) ++n;
  return n;
}

TEST(SvgPlotTest, OneLinePerSeriesWellFormed) {
  std::vector<PlotSeries> series = {
      {"hora", {{8, 0.01}, {1 << 20, 9.5}, {256u << 20, 12.0}}},
      {"gloo-ring", {{8, 0.001}, {1 << 20, 1.1}, {256u << 20, 1.3}}},
      {"mpi <stock> & co", {{1 << 20, 6.0}, {8, 0.02}}},
  };
  PlotText text;
  text.title = "allreduce, 2 ranks";
  const std::string svg = render_svg(text, series);
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_EQ(occurrences(svg, "<polyline"), 3u);
  EXPECT_EQ(occurrences(svg, "<title>hora</title>"), 1u);
  EXPECT_NE(svg.find("mpi &lt;stock&gt; &amp; co"), std::string::npos);
  EXPECT_NE(svg.find("bus bandwidth (GB/s)"), std::string::npos);
  EXPECT_NE(svg.find("message size"), std::string::npos);
  EXPECT_NE(svg.find(">256M<"), std::string::npos);  // an x tick at the largest size
  EXPECT_NE(svg.find(">1M<"), std::string::npos);
  EXPECT_EQ(occurrences(svg, "<g class=\"legend\">"), 1u);
}

TEST(SvgPlotTest, EmptyAndSinglePointSeries) {
  const std::string svg = render_svg(PlotText{}, {{"none", {}}, {"one", {{4096, 2.0}}}});
  EXPECT_EQ(xml_problem(svg), "") << svg;
  EXPECT_EQ(occurrences(svg, "<polyline"), 1u);
  EXPECT_NE(svg.find(">none<"), std::string::npos);  // still in the legend
  EXPECT_EQ(xml_problem(render_svg(PlotText{}, {})), "");
}

TEST(SvgPlotTest, CheckerCatchesBrokenXml) {
  EXPECT_NE(xml_problem("<svg><g></svg>"), "");
  EXPECT_NE(xml_problem("<svg>a & b</svg>"), "");
  EXPECT_EQ(xml_problem("<svg><g a=\"1\"/></svg>"), "");
}

}  // namespace
}  // namespace bench
}  // namespace hora
