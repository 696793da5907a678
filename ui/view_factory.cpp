#include "ui/view_factory.h"

#include "ui/breakdown_view.h"
#include "ui/compare_view.h"
#include "ui/dispatch_view.h"
#include "ui/frontier_view.h"
#include "ui/heatmap_view.h"
#include "ui/recording_view.h"
#include "ui/time_view.h"
#include "ui/timeline_view.h"

namespace attnscope::ui {

std::vector<ChartView*> makeExtraChartViews(QWidget* parent) {
  return {new HeatmapView(parent), new TimeView(parent), new BreakdownView(parent), new TimelineView(parent),
          new CompareView(parent), new DispatchView(parent), new FrontierView(parent)};
}

RecordingView* makeRecordingView(QWidget* parent) { return new RecordingView(parent); }

}  // namespace attnscope::ui
