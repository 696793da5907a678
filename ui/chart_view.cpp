#include "ui/chart_view.h"

#include <limits>

#include <QToolTip>
#include <qcustomplot.h>

#include "ui/plot_style.h"

namespace attnscope::ui {

QCustomPlot* ChartView::makePlot(QWidget* parent) {
  auto* plot = new QCustomPlot(parent);
  plot->setInteractions(QCP::iRangeDrag | QCP::iRangeZoom);
  plot->setMinimumSize(240, 200);
  plot->setNoAntialiasingOnDrag(true);
  applyPlotTheme(plot, parent ? parent->palette() : QPalette());
  return plot;
}

void ChartView::installHover(QCustomPlot* plot, HoverText text) {
  plot->setMouseTracking(true);
  QObject::connect(plot, &QCustomPlot::mouseMove, plot, [plot, text](QMouseEvent* e) {
    const QPointF pos = e->position();
    double best = 12 * 12;
    QCPGraph* best_graph = nullptr;
    int best_index = -1;
    for (int g = 0; g < plot->graphCount(); ++g) {
      QCPGraph* graph = plot->graph(g);
      if (!graph->visible()) continue;
      const auto data = graph->data();
      int i = 0;
      for (auto it = data->constBegin(); it != data->constEnd(); ++it, ++i) {
        const double dx = graph->keyAxis()->coordToPixel(it->key) - pos.x();
        const double dy = graph->valueAxis()->coordToPixel(it->value) - pos.y();
        if (dx * dx + dy * dy < best) {
          best = dx * dx + dy * dy;
          best_graph = graph;
          best_index = i;
        }
      }
    }
    const QString t = best_graph ? text(best_graph, best_index) : QString();
    if (t.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(e->globalPosition().toPoint(), t, plot);
  });
}

void ChartView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange) applyTheme();
  QWidget::changeEvent(event);
}

void ChartView::applyTheme() {
  for (QCustomPlot* plot : plots()) {
    applyPlotTheme(plot, palette());
    plot->replot(QCustomPlot::rpQueuedReplot);
  }
}

}  // namespace attnscope::ui
