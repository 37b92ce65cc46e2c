// A line plot as SVG, written without any plotting library: bus bandwidth (linear y, GB/s)
// against message size (log2 x, bytes), one polyline and one legend entry per series, axis
// labels, tick marks and grid lines. Pure functions, thread-safe.
#pragma once

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "hora/status.h"

namespace hora {
namespace bench {

struct PlotSeries {
  std::string name;
  std::vector<std::pair<size_t, double>> points;  // (bytes, busbw GB/s); bytes > 0
};

struct PlotText {
  std::string title;
  std::string x_label = "message size (bytes, log2 scale)";
  std::string y_label = "bus bandwidth (GB/s)";
};

// The SVG document. Series without points are listed in the legend with no line. Names and
// titles are XML-escaped.
std::string render_svg(const PlotText& text, const std::vector<PlotSeries>& series);

// Escapes &, <, >, " and ' for XML text and attributes.
std::string xml_escape(const std::string& text);

}  // namespace bench
}  // namespace hora
