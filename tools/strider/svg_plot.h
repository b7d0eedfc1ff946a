#pragma once
// A small SVG line chart (no plotting dependency): training loss per step and test accuracy per
// epoch, side by side.
#include <string>
#include <utility>
#include <vector>

namespace strider::tools {

struct Series {
  std::string title, x_label, y_label;
  std::vector<std::pair<double, double>> points;
};

// Writes the series as panels of one SVG file; throws strider::Error when it cannot write.
void write_svg_plot(const std::string& path, const std::vector<Series>& panels);

}  // namespace strider::tools
