#include "svg_plot.h"

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <sstream>

#include <strider/core/error.h>

namespace strider::tools {
namespace {

constexpr double kW = 460, kH = 320, kPad = 55;

std::string fmt(double v) {
  char b[32];
  std::snprintf(b, sizeof b, "%.3g", v);
  return b;
}

void panel(std::ostringstream& os, const Series& s, double x0) {
  double xmin = 1e300, xmax = -1e300, ymin = 1e300, ymax = -1e300;
  for (auto [x, y] : s.points) {
    xmin = std::min(xmin, x); xmax = std::max(xmax, x);
    ymin = std::min(ymin, y); ymax = std::max(ymax, y);
  }
  if (s.points.empty()) { xmin = ymin = 0; xmax = ymax = 1; }
  if (xmax == xmin) xmax = xmin + 1;
  if (ymax == ymin) { ymax += 0.5; ymin -= 0.5; }
  auto px = [&](double x) { return x0 + kPad + (x - xmin) / (xmax - xmin) * (kW - 2 * kPad); };
  auto py = [&](double y) { return kH - kPad - (y - ymin) / (ymax - ymin) * (kH - 2 * kPad); };
  os << "<g font-family='sans-serif' font-size='12'>\n";
  os << "<text x='" << x0 + kW / 2 << "' y='20' text-anchor='middle' font-size='14'>" << s.title << "</text>\n";
  os << "<rect x='" << x0 + kPad << "' y='" << kPad << "' width='" << kW - 2 * kPad << "' height='" << kH - 2 * kPad
     << "' fill='none' stroke='#999'/>\n";
  for (int i = 0; i <= 4; ++i) {
    const double y = ymin + (ymax - ymin) * i / 4, x = xmin + (xmax - xmin) * i / 4;
    os << "<text x='" << x0 + kPad - 6 << "' y='" << py(y) + 4 << "' text-anchor='end'>" << fmt(y) << "</text>\n";
    os << "<text x='" << px(x) << "' y='" << kH - kPad + 16 << "' text-anchor='middle'>" << fmt(x) << "</text>\n";
  }
  os << "<text x='" << x0 + kW / 2 << "' y='" << kH - 12 << "' text-anchor='middle'>" << s.x_label << "</text>\n";
  os << "<text x='" << x0 + 14 << "' y='" << kH / 2 << "' text-anchor='middle' transform='rotate(-90 " << x0 + 14
     << " " << kH / 2 << ")'>" << s.y_label << "</text>\n";
  os << "<polyline fill='none' stroke='#1f77b4' stroke-width='1.5' points='";
  for (auto [x, y] : s.points) os << px(x) << "," << py(y) << " ";
  os << "'/>\n";
  for (auto [x, y] : s.points.size() <= 50 ? s.points : decltype(s.points){})
    os << "<circle cx='" << px(x) << "' cy='" << py(y) << "' r='3' fill='#1f77b4'/>\n";
  os << "</g>\n";
}

}  // namespace

void write_svg_plot(const std::string& path, const std::vector<Series>& panels) {
  std::ostringstream os;
  os << "<svg xmlns='http://www.w3.org/2000/svg' width='" << kW * panels.size() << "' height='" << kH << "'>\n"
     << "<rect width='100%' height='100%' fill='white'/>\n";
  for (size_t i = 0; i < panels.size(); ++i) panel(os, panels[i], kW * static_cast<double>(i));
  os << "</svg>\n";
  std::ofstream f(path);
  STRIDER_CHECK(f.good(), "plot", "cannot write ", path);
  f << os.str();
}

}  // namespace strider::tools
