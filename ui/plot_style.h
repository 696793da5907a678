#pragma once
// Colours and plot styling shared by every chart: a stable colour per backend (the same in the
// memory, time, heatmap and breakdown views), shades for the variants of one backend, one colour
// per SDPA kernel (the Dispatch view's grid and the Recording view's cells), and a theme that
// follows the application palette (light or dark).

#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <QColor>
#include <QPalette>

#include "core/torch_dispatch/sdpa_rules.h"

class QCustomPlot;

namespace attnscope::ui {

// Stable across runs and views: known backends get fixed colours, others a hash of the id.
QColor backendColor(const std::string& backend_id);
// The colour of series `variant` of `count` for one backend: shades from dark to light.
// The shade of variant `variant` of `count` of a backend's colour: from darker to lighter on a
// light background; on a dark one (dark_background) from the colour itself to 145% lighter, so
// the darkest shade never sinks into the background and no shade turns white.
QColor variantColor(const std::string& backend_id, int variant, int count, bool dark_background = false);
// One colour per buffer name, the same in Breakdown and the Timeline and in every run: the
// buffers attention plans name (x, q, k, v, S, P, o, mask, lse, the gradients, ...) get distinct
// entries of one 20-colour palette, so no two of one plan share a colour; other names a hue of
// their own from a hash (a layer's prefix, "L3.", is ignored: L1.P and L3.P are both P).
QColor bufferColor(const std::string& name);
// The buffer colours of one chart: bufferColor's, except that a name outside the known ones whose
// hashed hue lies near a hue this palette already gave moves on until it is apart (torch's bmm
// and _softmax hashed to one green). Fed the run's plan first, in its order, Breakdown and the
// Timeline colour a run's buffers alike; a name keeps its colour once given. The first 10 such
// names of a palette are always kMinHueGap apart (more are, as room allows).
class BufferPalette {
 public:
  explicit BufferPalette(const std::vector<std::string>& first = {});
  QColor operator()(const std::string& name);
  // Hues closer than this (degrees, around the circle) count as alike.
  static constexpr int kMinHueGap = 20;

 private:
  std::map<std::string, QColor> given_;
  std::vector<int> hues_;  // the hues given to names outside the known ones
};

// flash green, efficient blue, cudnn purple, math red; nullopt (torch raises) grey.
QColor kernelColor(std::optional<torch_dispatch::SdpaKernel> kernel);
// By name as the explainer and the recorder write it ("flash", ...); grey for anything else (an
// op's name, "raises", unknown).
QColor kernelColor(std::string_view name);

bool isDarkPalette(const QPalette& palette);
// The predicted (dashed) line's shade of a series colour: deeper on a light background, paler on
// a dark one, so it stands out from the measured line it is drawn over.
QColor predictedShade(const QColor& color, bool dark_background);

// Background, axes, grid, labels and legend readable on the palette.
void applyPlotTheme(QCustomPlot* plot, const QPalette& palette);

}  // namespace attnscope::ui
