#include "ui/plot_layout.h"

#include <algorithm>
#include <cmath>
#include <vector>

#include <qcustomplot.h>

#include "ui/plot_style.h"

namespace attnscope::ui {

namespace {

// Linear ticks at whole numbers only: 1-2-5 steps of at least 1 (never 2.5 heads).
class IntegerAxisTicker : public QCPAxisTicker {
 protected:
  double getTickStep(const QCPRange& range) override {
    const double s = QCPAxisTicker::getTickStep(range);
    if (s <= 1) return 1;
    const double mag = std::pow(10.0, std::floor(std::log10(s)));
    const double m = s / mag;
    return (m <= 1 ? 1 : m <= 2 ? 2 : m <= 5 ? 5 : 10) * mag;
  }
  int getSubTickCount(double step) override { return step <= 1 ? 0 : step <= 2 ? 1 : 4; }
};

QCPTextElement* textAt(QCustomPlot* plot, int row) {
  return plot->plotLayout()->rowCount() > row ? qobject_cast<QCPTextElement*>(plot->plotLayout()->element(row, 0))
                                              : nullptr;
}

}  // namespace

void initPlotLayout(QCustomPlot* plot, const QString& title, bool with_legend) {
  QCPLayoutGrid* top = plot->plotLayout();
  QCPAxisRect* rect = plot->axisRect();
  top->take(rect);
  top->simplify();
  const QString family = plot->font().family();
  auto* title_text = new QCPTextElement(plot, title, QFont(family, 11, QFont::Bold));
  auto* context = new QCPTextElement(plot, QString(" "), QFont(family, 8));
  context->setMargins(QMargins(4, 0, 4, 4));
  auto* body = new QCPLayoutGrid;
  top->addElement(0, 0, title_text);
  top->addElement(1, 0, context);
  top->addElement(2, 0, body);
  top->setRowSpacing(0);
  top->setRowStretchFactor(0, 0.001);
  top->setRowStretchFactor(1, 0.001);
  body->addElement(0, 0, rect);
  if (plot->legend && with_legend) {
    // Beside the axis rect, at the top of its own column: a spacer below keeps the entries
    // together instead of spreading them over the plot's height.
    rect->insetLayout()->take(plot->legend);
    rect->insetLayout()->simplify();
    auto* column = new QCPLayoutGrid;
    column->setObjectName("legendColumn");
    body->addElement(0, 1, column);
    column->addElement(0, 0, plot->legend);
    // A plain element as the spacer: an empty grid's maximum height is 0, which would hand all
    // the height to the legend and spread its entries.
    column->addElement(1, 0, new QCPLayoutElement(plot));
    column->setRowStretchFactor(0, 0.001);
    column->setRowStretchFactor(1, 1);
    column->setMargins(QMargins(0, 8, 4, 0));
    body->setColumnStretchFactor(1, 0.001);
    plot->legend->setLayer("legend");
    plot->legend->setFillOrder(QCPLegend::foRowsFirst);
    // Icons no taller than the text: rows of 8 pt text 16 px apart instead of 22.
    plot->legend->setIconSize(26, 11);
    plot->legend->setRowSpacing(0);
    wrapLegend(plot);
  }
  title_text->setProperty("baseFontSize", title_text->font().pointSizeF());
  title_text->setProperty("rawTitle", title);
  context->setProperty("baseFontSize", context->font().pointSizeF());
  QObject::connect(plot, &QCustomPlot::beforeReplot, plot, [plot] { fitChart(plot, plot->viewport().size()); });
}

namespace {

QCPLayoutGrid* legendColumn(const QCustomPlot* plot) { return plot->findChild<QCPLayoutGrid*>("legendColumn"); }

// The axis rect's inner rect when the whole layout is laid out in size.
QRect layOut(QCustomPlot* plot, QSize size) {
  QCPLayoutGrid* top = plot->plotLayout();
  top->setOuterRect(QRect(QPoint(0, 0), size));
  top->update(QCPLayoutElement::upPreparation);
  top->update(QCPLayoutElement::upMargins);
  top->update(QCPLayoutElement::upLayout);
  return plot->axisRect()->rect();
}

void moveLegend(QCustomPlot* plot, LegendPlace place) {
  QCPLegend* legend = plot->legend;
  QCPLayoutGrid* body = plotBody(plot);
  QCPLayoutGrid* column = legendColumn(plot);
  if (place == LegendPlace::below && legend->layout() == column) {
    column->take(legend);
    column->simplify();
    body->addElement(1, 0, legend);
    body->setRowStretchFactor(0, 1);
    body->setRowStretchFactor(1, 0.001);
    legend->setMargins(QMargins(7, 5, 7, 4));
    column->setMargins(QMargins(0, 0, 0, 0));
    body->setMargins(QMargins(0, 0, 2, 3));  // the legend's frame inside the chart's edge
  } else if (place == LegendPlace::right && legend->layout() == body) {
    body->take(legend);
    body->simplify();
    column->insertRow(0);
    column->addElement(0, 0, legend);
    column->setRowStretchFactor(0, 0.001);
    column->setRowStretchFactor(1, 1);
    column->setMargins(QMargins(0, 8, 4, 0));
    body->setMargins(QMargins(0, 0, 0, 0));
  }
}

}  // namespace

LegendPlace legendPlace(const QCustomPlot* plot) {
  return plot->legend && plot->legend->layout() == plotBody(const_cast<QCustomPlot*>(plot)) ? LegendPlace::below
                                                                                            : LegendPlace::right;
}

LegendPlace fitLegend(QCustomPlot* plot, QSize size) {
  QCPLegend* legend = plot->legend;
  if (!legend || !plotBody(plot) || !legendColumn(plot) || size.width() <= 0 || size.height() <= 0)
    return LegendPlace::right;
  // itemCount() counts the wrapped grid's empty cells too.
  int n = 0;
  QCPAbstractLegendItem* first = nullptr;
  for (int i = 0; i < legend->itemCount(); ++i)
    if (QCPAbstractLegendItem* item = legend->item(i)) {
      ++n;
      if (!first) first = item;
    }
  // An empty legend (no series yet) draws no empty frame; its pen and brush return with entries.
  if (n == 0 && !legend->property("emptyPen").isValid()) {
    legend->setProperty("emptyPen", QVariant::fromValue(legend->borderPen()));
    legend->setProperty("emptyBrush", QVariant::fromValue(legend->brush()));
    legend->setBorderPen(Qt::NoPen);
    legend->setBrush(Qt::NoBrush);
  } else if (n > 0 && legend->property("emptyPen").isValid()) {
    legend->setBorderPen(legend->property("emptyPen").value<QPen>());
    legend->setBrush(legend->property("emptyBrush").value<QBrush>());
    legend->setProperty("emptyPen", QVariant());
    legend->setProperty("emptyBrush", QVariant());
  }
  if (!legend->visible() || n == 0) {
    moveLegend(plot, LegendPlace::right);
    return LegendPlace::right;
  }
  // A replot while panning or zooming changes nothing the fit depends on: the chart's size and
  // the legend's entries. Then the last fit stands.
  QString key = QStringLiteral("%1x%2").arg(size.width()).arg(size.height());
  for (int i = 0; i < legend->itemCount(); ++i)
    if (auto* item = qobject_cast<QCPPlottableLegendItem*>(legend->item(i))) key += '|' + item->plottable()->name();
  if (legend->property("fitKey").toString() == key) return legendPlace(plot);
  const QRect view = plot->viewport();
  // The legend's own size as the view set it (fitLegend may have shrunk it since).
  if (!legend->property("baseFontSize").isValid()) legend->setProperty("baseFontSize", legend->font().pointSizeF());
  const double base = legend->property("baseFontSize").toDouble();
  struct Try {
    LegendPlace place;
    double font;
    int wrap;
    QRect rect;       // the plot area
    bool whole;       // the legend inside the chart, at its full size
  };
  auto apply = [&](LegendPlace place, double font, int wrap) {
    QFont f = legend->font();
    if (font > 0 && f.pointSizeF() != font) {
      f.setPointSizeF(font);
      legend->setFont(f);
      for (int i = 0; i < legend->itemCount(); ++i)
        if (legend->item(i)) legend->item(i)->setFont(f);
    }
    // An entry is as tall as its icon or its text, and QCustomPlot clips it there: an icon of the
    // text's height cut the underscores off ("qkv proj" for qkv_proj), which sit a pixel lower.
    legend->setIconSize(26, QFontMetrics(legend->font()).height() + 1);
    moveLegend(plot, place);
    legend->setWrap(wrap);
    legend->setFillOrder(place == LegendPlace::right ? QCPLegend::foRowsFirst : QCPLegend::foColumnsFirst, true);
    const QRect area = layOut(plot, size);
    const QRect outer = legend->outerRect();
    const QSize need = legend->minimumOuterSizeHint();
    const bool whole = QRect(QPoint(0, 0), size).contains(outer) && outer.width() >= need.width() &&
                       outer.height() >= need.height();
    return Try{place, font, wrap, area, whole};
  };
  auto fits = [&](const Try& t) {
    return t.whole && t.rect.width() >= kMinPlotWidthShare * size.width() &&
           t.rect.height() >= kMinPlotHeightShare * size.height();
  };
  std::vector<Try> tried;
  for (double font : {base, std::min(base, 7.0), std::min(base, 6.0)}) {
    if (!tried.empty() && font == tried.back().font) continue;
    // Beside the plot: as many rows as the height holds (at most 14, so a column stays scannable).
    const Try one = apply(LegendPlace::right, font, 1);
    const int item_h = std::max(1, first->minimumOuterSizeHint().height() + legend->rowSpacing());
    const int rows = std::clamp((one.rect.height() + 20) / item_h, 1, 14);
    tried.push_back(apply(LegendPlace::right, font, rows));
    if (fits(tried.back())) break;
    // Below the plot: as many columns as the width holds.
    int cols = n;
    // The legend's own size hint needs no layout of the chart: only the wrap changes here.
    moveLegend(plot, LegendPlace::below);
    for (; cols > 1; --cols) {
      legend->setWrap(cols);
      legend->setFillOrder(QCPLegend::foColumnsFirst, true);
      if (legend->minimumOuterSizeHint().width() <= size.width() - 8) break;
    }
    tried.push_back(apply(LegendPlace::below, font, cols));
    if (fits(tried.back())) break;
  }
  const Try* best = &tried.back();
  if (!fits(*best)) {  // none keeps the share: a whole legend that leaves the plot most room
    auto score = [&](const Try& t) {
      return (t.whole ? 1.0 : 0.0) + 0.5 * std::min(1.0, std::min(t.rect.width() / (kMinPlotWidthShare * size.width()),
                                                                   t.rect.height() / (kMinPlotHeightShare * size.height())));
    };
    for (const Try& t : tried)
      if (score(t) > score(*best)) best = &t;
    apply(best->place, best->font, best->wrap);
  }
  plot->plotLayout()->setOuterRect(view);
  legend->setProperty("fitKey", key);
  return best->place;
}

QCPLayoutGrid* plotBody(QCustomPlot* plot) {
  return qobject_cast<QCPLayoutGrid*>(plot->plotLayout()->element(2, 0));
}

QCPTextElement* plotTitle(QCustomPlot* plot) { return textAt(plot, 0); }
QCPTextElement* plotContext(QCustomPlot* plot) { return textAt(plot, 1); }

void setPlotTitle(QCustomPlot* plot, const QString& title) {
  if (auto* t = plotTitle(plot)) {
    t->setText(title);
    t->setProperty("rawTitle", title);  // fitTexts may break it into lines
  }
}

namespace {

// The context's " · "-separated parts in lines no wider than `width` px in `font` (a part wider
// than that gets a line of its own).
QString wrapContext(const QString& context, const QFont& font, int width) {
  const QString sep = QStringLiteral(" \u00b7 ");
  const QFontMetrics fm(font);
  QString text, line;
  for (const QString& part : context.split(sep)) {
    const QString longer = line.isEmpty() ? part : line + sep + part;
    if (!line.isEmpty() && fm.horizontalAdvance(longer) > width) {
      text += line + '\n';
      line = part;
    } else {
      line = longer;
    }
  }
  return text + line;
}

int widestLine(const QString& text, const QFont& font) {
  const QFontMetrics fm(font);
  int w = 0;
  for (const QString& line : text.split('\n')) w = std::max(w, fm.horizontalAdvance(line));
  return w;
}

}  // namespace

void setPlotContext(QCustomPlot* plot, const QString& context) {
  // Wrapped at its " · " separators to the chart's width when laid out (fitChart): a text element
  // cannot wrap itself, and one long line would be clipped on a narrow chart. Until then, lines
  // of about 60 characters.
  QCPTextElement* t = plotContext(plot);
  if (!t) return;
  t->setProperty("rawContext", context);
  const QString wrapped = wrapContext(context, t->font(), QFontMetrics(t->font()).averageCharWidth() * 60);
  t->setText(wrapped.isEmpty() ? QStringLiteral(" ") : wrapped);
}

void fitTexts(QCustomPlot* plot, QSize size) {
  const int room = size.width() - 16;
  if (room <= 0) return;
  // The title in its own size while it fits, else smaller down to 7 pt (never cut).
  if (QCPTextElement* title = plotTitle(plot)) {
    const double base = title->property("baseFontSize").toDouble();
    const QString raw = title->property("rawTitle").toString();
    QFont f = title->font();
    if (base > 0) f.setPointSizeF(base);
    while (f.pointSizeF() > 7 && widestLine(raw, f) > room) f.setPointSizeF(f.pointSizeF() - 0.5);
    // Still too wide at 7 pt: lines broken between words.
    QString text = raw;
    if (widestLine(raw, f) > room) {
      QString line;
      text.clear();
      for (const QString& word : raw.split(' ')) {
        const QString longer = line.isEmpty() ? word : line + ' ' + word;
        if (!line.isEmpty() && QFontMetrics(f).horizontalAdvance(longer) > room) {
          text += line + '\n';
          line = word;
        } else {
          line = longer;
        }
      }
      text += line;
    }
    if (f != title->font()) title->setFont(f);
    if (text != title->text()) title->setText(text);
  }
  if (QCPTextElement* context = plotContext(plot)) {
    const QString raw = context->property("rawContext").toString();
    if (raw.isEmpty()) return;
    const double base = context->property("baseFontSize").toDouble();
    QFont f = context->font();
    if (base > 0) f.setPointSizeF(base);
    QString text = wrapContext(raw, f, room);
    while (f.pointSizeF() > 6 && widestLine(text, f) > room) {  // one part alone is wider
      f.setPointSizeF(f.pointSizeF() - 0.5);
      text = wrapContext(raw, f, room);
    }
    if (f != context->font()) context->setFont(f);
    if (text != context->text()) context->setText(text);
  }
}

QString wrapWords(const QString& text, const QFontMetrics& metrics, int width) {
  QStringList out;
  for (const QString& paragraph : text.split('\n')) {
    QString line;
    for (const QString& word : paragraph.split(' ', Qt::SkipEmptyParts)) {
      const QString longer = line.isEmpty() ? word : line + ' ' + word;
      if (!line.isEmpty() && metrics.horizontalAdvance(longer) > width) {
        out << line;
        line = word;
      } else {
        line = longer;
      }
    }
    out << line;
  }
  return out.join('\n');
}

QCPItemText* addPlotNote(QCustomPlot* plot, const QString& text, const QFont& font) {
  auto* note = new QCPItemText(plot);
  note->position->setType(QCPItemPosition::ptAxisRectRatio);
  note->position->setCoords(0.5, 0.45);
  note->setFont(font);
  note->setProperty("noteText", text);
  note->setText(text);
  return note;
}

namespace {

// Every note re-broken to the axis rect's width as laid out now (a chart `size` wide: scaled).
void fitNotes(QCustomPlot* plot, QSize size) {
  const int viewport = std::max(1, plot->viewport().width());
  const int rect = plot->axisRect() ? plot->axisRect()->width() : viewport;
  const int width = std::max(40, rect * size.width() / viewport - 12);
  for (int i = 0; i < plot->itemCount(); ++i) {
    auto* note = qobject_cast<QCPItemText*>(plot->item(i));
    if (!note || !note->property("noteText").isValid()) continue;
    note->setText(wrapWords(note->property("noteText").toString(), QFontMetrics(note->font()), width));
  }
}

}  // namespace

LegendPlace fitChart(QCustomPlot* plot, QSize size) {
  fitTexts(plot, size);
  fitNotes(plot, size);
  return fitLegend(plot, size);
}

void wrapLegend(QCustomPlot* plot, int max_rows) {
  if (!plot->legend) return;
  plot->legend->setWrap(max_rows);
  plot->legend->setFillOrder(QCPLegend::foRowsFirst, true);
  plot->legend->setProperty("fitKey", QVariant());  // the next replot fits it again
}

int failedMarkerShape(RunStatus s) {
  switch (s) {
    case RunStatus::oom: return QCPScatterStyle::ssCross;
    case RunStatus::unsupported: return QCPScatterStyle::ssTriangle;
    case RunStatus::skipped: return QCPScatterStyle::ssSquare;
    case RunStatus::cancelled: return QCPScatterStyle::ssStar;
    case RunStatus::wrong: return QCPScatterStyle::ssCrossCircle;  // ran, but failed its accuracy check
    default: return QCPScatterStyle::ssDiamond;  // error, and any failed status added later
  }
}

void addStyleKey(QCustomPlot* plot, bool measured, bool predicted, const std::set<RunStatus>& failed) {
  const QColor grey(0x80, 0x80, 0x80);
  auto key = [&](const QString& name, const QPen& pen, const QCPScatterStyle& marker, bool line) {
    QCPGraph* g = plot->addGraph();
    g->setName(name);
    g->setPen(pen);
    g->setScatterStyle(marker);
    g->setLineStyle(line ? QCPGraph::lsLine : QCPGraph::lsNone);
    g->setProperty("kind", "key");
    g->setSelectable(QCP::stNone);
  };
  if (measured) key(QObject::tr("measured"), QPen(grey, 2), QCPScatterStyle(QCPScatterStyle::ssDisc, 6), true);
  if (predicted) {
    const QColor shade = predictedShade(grey, isDarkPalette(plot->palette()));
    key(QObject::tr("predicted"), QPen(shade, 1.5, Qt::DashLine),
        QCPScatterStyle(QCPScatterStyle::ssCircle, QPen(shade, 1.5), QBrush(Qt::NoBrush), 10), true);
  }
  for (RunStatus s : failed) {
    const auto name = toString(s);
    key(QObject::tr("%1 (at its prediction)").arg(QString::fromUtf8(name.data(), static_cast<int>(name.size()))),
        QPen(grey, 2),
        QCPScatterStyle(static_cast<QCPScatterStyle::ScatterShape>(failedMarkerShape(s)), QPen(grey, 2),
                        QBrush(Qt::NoBrush), 10),
        false);
  }
  wrapLegend(plot);
}

QSharedPointer<QCPAxisTicker> sweptValueTicker(const std::vector<int64_t>& values, bool log) {
  if (!values.empty() && values.size() <= 12) {
    auto t = QSharedPointer<QCPAxisTickerText>::create();
    for (int64_t v : values) t->addTick(static_cast<double>(v), QString::number(v));
    return t;
  }
  if (log) {
    auto t = QSharedPointer<QCPAxisTickerLog>::create();
    t->setLogBase(2);
    return t;
  }
  return QSharedPointer<IntegerAxisTicker>::create();
}

void setSweptRange(QCustomPlot* plot, const std::vector<double>& values, bool log) {
  if (values.empty()) {
    plot->xAxis->setRange(log ? 1 : 0, 16);
    return;
  }
  const auto [lo_it, hi_it] = std::minmax_element(values.begin(), values.end());
  const double lo = *lo_it, hi = *hi_it;
  if (log) {
    plot->xAxis->setRange(std::max(lo, 1e-9) / 1.3, std::max(hi, 1e-9) * 1.3);
  } else if (hi > lo) {
    const double pad = (hi - lo) * 0.05;
    plot->xAxis->setRange(lo - pad, hi + pad);
  } else {
    const double pad = std::max(1.0, std::abs(lo) * 0.1);
    plot->xAxis->setRange(lo - pad, hi + pad);
  }
}

}  // namespace attnscope::ui
