#include "ui/chart_view.h"

#include <memory>

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

bool ChartView::nearestPoint(QCustomPlot* plot, QPointF pos, QCPGraph** graph_out, int* index_out) {
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
  *graph_out = best_graph;
  *index_out = best_index;
  return best_graph != nullptr;
}

void ChartView::installHover(QCustomPlot* plot, HoverText text, PickRun pick) {
  plot->setMouseTracking(true);
  QObject::connect(plot, &QCustomPlot::mouseMove, plot, [plot, text](QMouseEvent* e) {
    QCPGraph* graph = nullptr;
    int index = -1;
    const QString t = nearestPoint(plot, e->position(), &graph, &index) ? text(graph, index) : QString();
    if (t.isEmpty()) QToolTip::hideText();
    else QToolTip::showText(e->globalPosition().toPoint(), t, plot);
  });
  if (!pick) return;
  auto press = std::make_shared<QPointF>();
  QObject::connect(plot, &QCustomPlot::mousePress, plot, [press](QMouseEvent* e) { *press = e->position(); });
  QObject::connect(plot, &QCustomPlot::mouseRelease, plot, [plot, press, pick](QMouseEvent* e) {
    if (e->button() != Qt::LeftButton || (e->position() - *press).manhattanLength() > 4) return;  // a drag
    QCPGraph* graph = nullptr;
    int index = -1;
    if (!nearestPoint(plot, e->position(), &graph, &index)) return;
    const QVariantList ids = graph->property("runIds").toList();
    if (index >= 0 && index < ids.size() && ids[index].toLongLong() > 0) pick(ids[index].toLongLong());
  });
}

void ChartView::changeEvent(QEvent* event) {
  if (event->type() == QEvent::PaletteChange) {
    applyTheme();
    // Series shades depend on the background (variantColor, predictedShade): drawn again.
    if (!sweeps_.empty()) setSweeps(SweepSnapshots(sweeps_));
  }
  QWidget::changeEvent(event);
}

void ChartView::applyTheme() {
  for (QCustomPlot* plot : plots()) {
    applyPlotTheme(plot, palette());
    plot->replot(QCustomPlot::rpQueuedReplot);
  }
}

}  // namespace attnscope::ui
