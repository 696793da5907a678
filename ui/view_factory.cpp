#include "ui/view_factory.h"

#include "ui/chart_view.h"

namespace attnscope::ui {

std::vector<ChartView*> makeExtraChartViews(QWidget* parent) {
  Q_UNUSED(parent);
  return {};
}

}  // namespace attnscope::ui
