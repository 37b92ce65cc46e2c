// The SVG line plot (see svg_plot.h). Layout: a fixed 900x540 canvas, the plot area inset by
// margins for the axis labels, the legend in the top-left corner of the plot area.
#include "benchmarks/hora_bench/svg_plot.h"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <sstream>

#include "benchmarks/hora_bench/size_parse.h"

namespace hora {
namespace bench {
namespace {

constexpr double kWidth = 900, kHeight = 540;
constexpr double kLeft = 80, kRight = 30, kTop = 50, kBottom = 70;
const char* const kColors[] = {"#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd",
                               "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22", "#17becf"};
constexpr size_t kNumColors = sizeof(kColors) / sizeof(kColors[0]);

std::string num(double v) {
  char buf[32];
  std::snprintf(buf, sizeof(buf), "%.1f", v);
  return buf;
}

// A "nice" tick step (1, 2 or 5 times a power of ten) giving about `ticks` ticks up to top.
double nice_step(double top, int ticks) {
  const double raw = top / ticks;
  const double mag = std::pow(10.0, std::floor(std::log10(raw)));
  for (double m : {1.0, 2.0, 5.0, 10.0}) {
    if (m * mag >= raw) return m * mag;
  }
  return 10 * mag;
}

}  // namespace

std::string xml_escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

std::string render_svg(const PlotText& text, const std::vector<PlotSeries>& series) {
  // Data range: x in whole powers of two around the sizes, y from 0 to a nice top.
  double x_min = 0, x_max = 1, y_max = 0;
  bool any = false;
  for (const PlotSeries& s : series) {
    for (const auto& p : s.points) {
      const double lx = std::log2(static_cast<double>(std::max<size_t>(p.first, 1)));
      if (!any) {
        x_min = x_max = lx;
        any = true;
      }
      x_min = std::min(x_min, lx);
      x_max = std::max(x_max, lx);
      y_max = std::max(y_max, p.second);
    }
  }
  x_min = std::floor(x_min);
  x_max = std::ceil(x_max);
  if (x_max <= x_min) x_max = x_min + 1;
  if (!(y_max > 0)) y_max = 1;
  const double y_step = nice_step(y_max, 6);
  const double y_top = std::ceil(y_max / y_step) * y_step;
  const double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;
  auto px = [&](double lx) { return kLeft + (lx - x_min) / (x_max - x_min) * pw; };
  auto py = [&](double y) { return kTop + ph - y / y_top * ph; };

  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" viewBox=\"0 0 " << kWidth << " " << kHeight
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kWidth / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">"
      << xml_escape(text.title) << "</text>\n";
  // Grid, ticks and tick labels. x: every power of two, labelled every `x_label_every`.
  const int x_span = static_cast<int>(x_max - x_min);
  // Labels on exponents divisible by 1, 2 or 4, so 1K, 1M and 1G get one when in range.
  const int x_label_every = x_span <= 12 ? 1 : (x_span <= 28 ? 2 : 4);
  svg << "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (int k = 0; k <= x_span; ++k) {
    const double x = px(x_min + k);
    svg << "<line x1=\"" << num(x) << "\" y1=\"" << kTop << "\" x2=\"" << num(x) << "\" y2=\""
        << kTop + ph << "\"/>\n";
  }
  for (double y = 0; y <= y_top + y_step / 2; y += y_step) {
    svg << "<line x1=\"" << kLeft << "\" y1=\"" << num(py(y)) << "\" x2=\"" << kLeft + pw
        << "\" y2=\"" << num(py(y)) << "\"/>\n";
  }
  svg << "</g>\n<g>\n";
  for (int k = 0; k <= x_span; ++k) {
    if (static_cast<int>(x_min + k) % x_label_every != 0) continue;
    const double x = px(x_min + k);
    const size_t bytes = static_cast<size_t>(std::llround(std::exp2(x_min + k)));
    svg << "<line x1=\"" << num(x) << "\" y1=\"" << kTop + ph << "\" x2=\"" << num(x) << "\" y2=\""
        << kTop + ph + 5 << "\" stroke=\"black\"/>\n"
        << "<text x=\"" << num(x) << "\" y=\"" << kTop + ph + 18 << "\" text-anchor=\"middle\">"
        << format_size_short(bytes) << "</text>\n";
  }
  for (double y = 0; y <= y_top + y_step / 2; y += y_step) {
    char label[32];
    std::snprintf(label, sizeof(label), y_step < 1 ? "%.1f" : "%.0f", y);
    svg << "<line x1=\"" << kLeft - 5 << "\" y1=\"" << num(py(y)) << "\" x2=\"" << kLeft
        << "\" y2=\"" << num(py(y)) << "\" stroke=\"black\"/>\n"
        << "<text x=\"" << kLeft - 8 << "\" y=\"" << num(py(y) + 4) << "\" text-anchor=\"end\">"
        << label << "</text>\n";
  }
  svg << "</g>\n";
  // Axes and their labels.
  svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << pw << "\" height=\"" << ph
      << "\" fill=\"none\" stroke=\"black\"/>\n"
      << "<text x=\"" << kLeft + pw / 2 << "\" y=\"" << kHeight - 20 << "\" text-anchor=\"middle\">"
      << xml_escape(text.x_label) << "</text>\n"
      << "<text x=\"20\" y=\"" << kTop + ph / 2
      << "\" text-anchor=\"middle\" transform=\"rotate(-90 20 " << kTop + ph / 2 << ")\">"
      << xml_escape(text.y_label) << "</text>\n";
  // One polyline per series, then the legend.
  for (size_t k = 0; k < series.size(); ++k) {
    const PlotSeries& s = series[k];
    if (s.points.empty()) continue;
    auto points = s.points;
    std::sort(points.begin(), points.end());
    svg << "<polyline class=\"series\" fill=\"none\" stroke-width=\"2\" stroke=\""
        << kColors[k % kNumColors] << "\" points=\"";
    for (size_t i = 0; i < points.size(); ++i) {
      const double lx = std::log2(static_cast<double>(std::max<size_t>(points[i].first, 1)));
      svg << (i ? " " : "") << num(px(lx)) << "," << num(py(points[i].second));
    }
    svg << "\"><title>" << xml_escape(s.name) << "</title></polyline>\n";
  }
  svg << "<g class=\"legend\">\n";
  for (size_t k = 0; k < series.size(); ++k) {
    const double y = kTop + 18 + 18 * static_cast<double>(k);
    svg << "<line x1=\"" << kLeft + 12 << "\" y1=\"" << num(y - 4) << "\" x2=\"" << kLeft + 36
        << "\" y2=\"" << num(y - 4) << "\" stroke-width=\"2\" stroke=\"" << kColors[k % kNumColors]
        << "\"/>\n<text x=\"" << kLeft + 42 << "\" y=\"" << num(y) << "\">"
        << xml_escape(series[k].name) << "</text>\n";
  }
  svg << "</g>\n</svg>\n";
  return svg.str();
}

}  // namespace bench
}  // namespace hora
