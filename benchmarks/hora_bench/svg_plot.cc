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

// The plot area and its data range: x in whole powers of two around the sizes (log2 of the
// bytes), y from 0 to a nice top; px and py map data to canvas coordinates.
struct Axes {
  double x_min = 0, x_max = 1;
  double y_step = 1, y_top = 1;
  double pw = kWidth - kLeft - kRight, ph = kHeight - kTop - kBottom;

  double px(double lx) const { return kLeft + (lx - x_min) / (x_max - x_min) * pw; }
  double py(double y) const { return kTop + ph - y / y_top * ph; }
};

Axes fit_axes(const std::vector<PlotSeries>& series) {
  Axes a;
  double y_max = 0;
  bool any = false;
  for (const PlotSeries& s : series) {
    for (const auto& p : s.points) {
      const double lx = std::log2(static_cast<double>(std::max<size_t>(p.first, 1)));
      if (!any) {
        a.x_min = a.x_max = lx;
        any = true;
      }
      a.x_min = std::min(a.x_min, lx);
      a.x_max = std::max(a.x_max, lx);
      y_max = std::max(y_max, p.second);
    }
  }
  a.x_min = std::floor(a.x_min);
  a.x_max = std::ceil(a.x_max);
  if (a.x_max <= a.x_min) a.x_max = a.x_min + 1;
  if (!(y_max > 0)) y_max = 1;
  a.y_step = nice_step(y_max, 6);
  a.y_top = std::ceil(y_max / a.y_step) * a.y_step;
  return a;
}

// Grid, ticks and tick labels. x: every power of two, labelled every `x_label_every`.
void write_grid(std::ostringstream& svg, const Axes& a) {
  const int x_span = static_cast<int>(a.x_max - a.x_min);
  // Labels on exponents divisible by 1, 2 or 4, so 1K, 1M and 1G get one when in range.
  const int x_label_every = x_span <= 12 ? 1 : (x_span <= 28 ? 2 : 4);
  svg << "<g stroke=\"#dddddd\" stroke-width=\"1\">\n";
  for (int k = 0; k <= x_span; ++k) {
    const double x = a.px(a.x_min + k);
    svg << "<line x1=\"" << num(x) << "\" y1=\"" << kTop << "\" x2=\"" << num(x) << "\" y2=\""
        << kTop + a.ph << "\"/>\n";
  }
  for (double y = 0; y <= a.y_top + a.y_step / 2; y += a.y_step) {
    svg << "<line x1=\"" << kLeft << "\" y1=\"" << num(a.py(y)) << "\" x2=\"" << kLeft + a.pw
        << "\" y2=\"" << num(a.py(y)) << "\"/>\n";
  }
  svg << "</g>\n<g>\n";
  for (int k = 0; k <= x_span; ++k) {
    if (static_cast<int>(a.x_min + k) % x_label_every != 0) continue;
    const double x = a.px(a.x_min + k);
    const size_t bytes = static_cast<size_t>(std::llround(std::exp2(a.x_min + k)));
    svg << "<line x1=\"" << num(x) << "\" y1=\"" << kTop + a.ph << "\" x2=\"" << num(x)
        << "\" y2=\"" << kTop + a.ph + 5 << "\" stroke=\"black\"/>\n"
        << "<text x=\"" << num(x) << "\" y=\"" << kTop + a.ph + 18 << "\" text-anchor=\"middle\">"
        << format_size_short(bytes) << "</text>\n";
  }
  for (double y = 0; y <= a.y_top + a.y_step / 2; y += a.y_step) {
    char label[32];
    std::snprintf(label, sizeof(label), a.y_step < 1 ? "%.1f" : "%.0f", y);
    svg << "<line x1=\"" << kLeft - 5 << "\" y1=\"" << num(a.py(y)) << "\" x2=\"" << kLeft
        << "\" y2=\"" << num(a.py(y)) << "\" stroke=\"black\"/>\n"
        << "<text x=\"" << kLeft - 8 << "\" y=\"" << num(a.py(y) + 4) << "\" text-anchor=\"end\">"
        << label << "</text>\n";
  }
  svg << "</g>\n";
}

// Axes and their labels.
void write_frame(std::ostringstream& svg, const Axes& a, const PlotText& text) {
  svg << "<rect x=\"" << kLeft << "\" y=\"" << kTop << "\" width=\"" << a.pw << "\" height=\""
      << a.ph << "\" fill=\"none\" stroke=\"black\"/>\n"
      << "<text x=\"" << kLeft + a.pw / 2 << "\" y=\"" << kHeight - 20
      << "\" text-anchor=\"middle\">" << xml_escape(text.x_label) << "</text>\n"
      << "<text x=\"20\" y=\"" << kTop + a.ph / 2
      << "\" text-anchor=\"middle\" transform=\"rotate(-90 20 " << kTop + a.ph / 2 << ")\">"
      << xml_escape(text.y_label) << "</text>\n";
}

// One polyline per series, then the legend.
void write_series(std::ostringstream& svg, const Axes& a, const std::vector<PlotSeries>& series) {
  for (size_t k = 0; k < series.size(); ++k) {
    const PlotSeries& s = series[k];
    if (s.points.empty()) continue;
    auto points = s.points;
    std::sort(points.begin(), points.end());
    svg << "<polyline class=\"series\" fill=\"none\" stroke-width=\"2\" stroke=\""
        << kColors[k % kNumColors] << "\" points=\"";
    for (size_t i = 0; i < points.size(); ++i) {
      const double lx = std::log2(static_cast<double>(std::max<size_t>(points[i].first, 1)));
      svg << (i ? " " : "") << num(a.px(lx)) << "," << num(a.py(points[i].second));
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
  svg << "</g>\n";
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
  const Axes axes = fit_axes(series);
  std::ostringstream svg;
  svg << "<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n"
      << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << kWidth << "\" height=\"" << kHeight
      << "\" viewBox=\"0 0 " << kWidth << " " << kHeight
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"" << kWidth / 2 << "\" y=\"28\" text-anchor=\"middle\" font-size=\"16\">"
      << xml_escape(text.title) << "</text>\n";
  write_grid(svg, axes);
  write_frame(svg, axes, text);
  write_series(svg, axes, series);
  svg << "</svg>\n";
  return svg.str();
}

}  // namespace bench
}  // namespace hora
