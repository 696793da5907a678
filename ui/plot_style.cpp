#include "ui/plot_style.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdint>
#include <cstdlib>

#include <qcustomplot.h>

namespace attnscope::ui {

QColor backendColor(const std::string& id) {
  // Tableau 10, with its three pale entries (yellow edc948, pink ff9da7, grey bab0ac) replaced by
  // deeper shades of the same hues: a 2 px line in any of them reads on white and on dark grey.
  static const std::array<QColor, 10> palette{
      QColor(0x4e, 0x79, 0xa7), QColor(0xf2, 0x8e, 0x2b), QColor(0x59, 0xa1, 0x4f),
      QColor(0xe1, 0x57, 0x59), QColor(0xb0, 0x7a, 0xa1), QColor(0x76, 0xb7, 0xb2),
      QColor(0xb8, 0x8a, 0x00), QColor(0xd4, 0x50, 0x87), QColor(0x9c, 0x75, 0x5f),
      QColor(0x7f, 0x7f, 0x7f)};
  static const std::array<const char*, 5> known{"cpu.reference", "cpu.flash", "cuda.math",
                                                "cuda.chunked", "cuda.flash"};
  for (size_t i = 0; i < known.size(); ++i)
    if (id == known[i]) return palette[i];
  uint32_t h = 2166136261u;  // FNV-1a: the same colour on every run and machine
  for (unsigned char c : id) h = (h ^ c) * 16777619u;
  return palette[known.size() + h % (palette.size() - known.size())];
}

QColor variantColor(const std::string& id, int variant, int count, bool dark_background) {
  const QColor base = backendColor(id);
  if (dark_background) {
    // The colour itself to 145% lighter: every shade stays well above the #26282b plot
    // background and keeps its hue (lighter than that, blue and orange both turn white).
    if (count <= 1) return base;
    const double t = static_cast<double>(variant) / (count - 1);
    return base.lighter(static_cast<int>(100 + t * 45));
  }
  if (count <= 1) return base;
  // From about 165% darker to 115% lighter across the variants: lighter than that fades into
  // a white background (a 2 px line at 140% of Tableau's orange was hard to read).
  const double t = static_cast<double>(variant) / (count - 1);
  const int factor = static_cast<int>(60 + t * 55);
  return factor < 100 ? base.darker(100 * 100 / factor) : base.lighter(factor);
}

namespace {

// A buffer's name without a stack's layer prefix ("L3.P" -> "P").
std::string bufferKey(const std::string& full) {
  if (full.size() > 2 && full[0] == 'L' && std::isdigit(static_cast<unsigned char>(full[1]))) {
    const size_t dot = full.find('.');
    if (dot != std::string::npos) return full.substr(dot + 1);
  }
  return full;
}

constexpr int kHashedSaturation = 110, kHashedValue = 225;

// The hue (0..350) a name outside the known ones hashes to (FNV-1a: the same on every machine).
int hashedHue(const std::string& name) {
  uint32_t h = 2166136261u;
  for (unsigned char c : name) h = (h ^ c) * 16777619u;
  return static_cast<int>((h % 36) * 10);
}

}  // namespace

QColor bufferColor(const std::string& full) {
  const std::string name = bufferKey(full);
  // Tableau 20 in an order that keeps neighbours in a plan apart (q, k, v; S, P; dq, dk, dv).
  static const std::array<QColor, 20> palette{
      QColor(0x1f, 0x77, 0xb4), QColor(0xff, 0x7f, 0x0e), QColor(0x2c, 0xa0, 0x2c), QColor(0xd6, 0x27, 0x28),
      QColor(0x94, 0x67, 0xbd), QColor(0x8c, 0x56, 0x4b), QColor(0xe3, 0x77, 0xc2), QColor(0x7f, 0x7f, 0x7f),
      QColor(0xbc, 0xbd, 0x22), QColor(0x17, 0xbe, 0xcf), QColor(0xae, 0xc7, 0xe8), QColor(0xff, 0xbb, 0x78),
      QColor(0x98, 0xdf, 0x8a), QColor(0xff, 0x98, 0x96), QColor(0xc5, 0xb0, 0xd5), QColor(0xc4, 0x9c, 0x94),
      QColor(0xf7, 0xb6, 0xd2), QColor(0xc7, 0xc7, 0xc7), QColor(0xdb, 0xdb, 0x8d), QColor(0x9e, 0xda, 0xe5)};
  static const std::array<const char*, 20> known{"x", "q", "k", "v", "S", "P", "o", "mask", "lse", "dO",
                                                 "dS", "dP", "dq", "dk", "dv", "dx", "y", "scores", "g", "qkv"};
  for (size_t i = 0; i < known.size(); ++i)
    if (name == known[i]) return palette[i];
  return QColor::fromHsv(hashedHue(name), kHashedSaturation, kHashedValue);
}

BufferPalette::BufferPalette(const std::vector<std::string>& first) {
  for (const std::string& name : first) (*this)(name);
}

QColor BufferPalette::operator()(const std::string& full) {
  const std::string name = bufferKey(full);
  if (auto it = given_.find(name); it != given_.end()) return it->second;
  QColor color = bufferColor(name);
  const int hashed = hashedHue(name);
  if (color == QColor::fromHsv(hashed, kHashedSaturation, kHashedValue)) {  // not a known name
    auto apart = [this](int hue) {
      for (int h : hues_) {
        const int d = std::abs(h - hue) % 360;
        if (std::min(d, 360 - d) < kMinHueGap) return false;
      }
      return true;
    };
    // Steps of 65 degrees visit every multiple of 5 before repeating; the hash's own when none is
    // free. Each hue given rules out at most 7 of the 72, so the first 10 such names stay apart.
    int hue = hashed;
    for (int tries = 0; tries < 72 && !apart(hue); ++tries) hue = (hue + 65) % 360;
    if (!apart(hue)) hue = hashed;
    hues_.push_back(hue);
    color = QColor::fromHsv(hue, kHashedSaturation, kHashedValue);
  }
  given_.emplace(name, color);
  return color;
}

QColor kernelColor(std::optional<torch_dispatch::SdpaKernel> kernel) {
  using torch_dispatch::SdpaKernel;
  if (!kernel) return QColor(0x80, 0x80, 0x80);
  switch (*kernel) {
    case SdpaKernel::flash: return QColor(0x2e, 0x9e, 0x4f);
    case SdpaKernel::efficient: return QColor(0x3b, 0x7d, 0xd8);
    case SdpaKernel::cudnn: return QColor(0x8e, 0x5c, 0xc9);
    case SdpaKernel::math: return QColor(0xd9, 0x48, 0x3b);
  }
  return QColor(0x80, 0x80, 0x80);
}

QColor kernelColor(std::string_view name) { return kernelColor(torch_dispatch::parseSdpaKernel(name)); }

bool isDarkPalette(const QPalette& p) { return p.color(QPalette::Window).lightness() < 128; }

QColor predictedShade(const QColor& color, bool dark_background) {
  return dark_background ? color.lighter(135) : color.darker(170);
}

void applyPlotTheme(QCustomPlot* plot, const QPalette& p) {
  const bool dark = isDarkPalette(p);
  const QColor bg = dark ? QColor(0x26, 0x28, 0x2b) : QColor(Qt::white);
  const QColor fg = dark ? QColor(0xe0, 0xe0, 0xe0) : QColor(0x20, 0x20, 0x20);
  const QColor grid = dark ? QColor(0x48, 0x4b, 0x50) : QColor(0xdd, 0xdd, 0xdd);
  plot->setBackground(bg);
  for (QCPAxisRect* rect : plot->axisRects()) {
    rect->setBackground(bg);
    for (QCPAxis* axis : rect->axes()) {
      axis->setBasePen(QPen(fg));
      axis->setTickPen(QPen(fg));
      axis->setSubTickPen(QPen(fg));
      axis->setTickLabelColor(fg);
      axis->setLabelColor(fg);
      axis->grid()->setPen(QPen(grid, 1, Qt::DotLine));
      axis->grid()->setSubGridPen(QPen(grid.lighter(dark ? 80 : 105), 1, Qt::DotLine));
    }
  }
  if (plot->legend) {  // null when a view rebuilt the layout without the default axis rect
    QColor legend_bg = bg;
    legend_bg.setAlpha(170);  // lines behind the legend stay visible
    plot->legend->setTextColor(fg);
    if (plot->legend->property("emptyPen").isValid()) {  // an empty legend (plot_layout): kept for its entries
      plot->legend->setProperty("emptyPen", QVariant::fromValue(QPen(grid)));
      plot->legend->setProperty("emptyBrush", QVariant::fromValue(QBrush(legend_bg)));
    } else {
      plot->legend->setBrush(QBrush(legend_bg));
      plot->legend->setBorderPen(QPen(grid));
    }
  }
  for (int i = 0; i < plot->plotLayout()->elementCount(); ++i)
    if (auto* title = qobject_cast<QCPTextElement*>(plot->plotLayout()->elementAt(i)))
      title->setTextColor(fg);
}

}  // namespace attnscope::ui
