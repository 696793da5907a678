#pragma once
// The chart tabs after Memory, in tab order: Heatmap, Time, Breakdown, Timeline, Compare, Dispatch.
// Then, after Results, the Recording tab: one recording's calls, not a chart of sweeps, so neither
// the chart export nor the report has it.

#include <vector>

class QWidget;

namespace attnscope::ui {

class ChartView;
class RecordingView;
std::vector<ChartView*> makeExtraChartViews(QWidget* parent);
RecordingView* makeRecordingView(QWidget* parent);

}  // namespace attnscope::ui
