#pragma once
// The chart tabs after Memory, in tab order: Heatmap, Time, Breakdown, Timeline, Compare, Dispatch.

#include <vector>

class QWidget;

namespace attnscope::ui {

class ChartView;
std::vector<ChartView*> makeExtraChartViews(QWidget* parent);

}  // namespace attnscope::ui
