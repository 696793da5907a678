// Exports at 72, 96, 150 and 300 DPI lay out by DPI: every title, context line, legend entry,
// axis label and tick label is painted whole (not clipped by its item's clip rect nor by the
// image), byte tick labels read what the axis computed ("256 MiB", never a cut "56 MiB"), and a
// 300 DPI PNG shrunk to 96 DPI size looks like the 96 DPI PNG (text scaled with everything else).
//
// The text check paints through the same renderPlots() the PNG export uses, into a device that
// records each piece of text with the clip in force when it was drawn.

#include <QImage>
#include <QPaintEngine>
#include <QRegularExpression>
#include <qcustomplot.h>

#include "core/store/store.h"
#include "core/spec/sweep_spec.h"
#include "ui/breakdown_view.h"
#include "ui/chart_context.h"
#include "ui/chart_export.h"
#include "ui/heatmap_view.h"
#include "ui/memory_view.h"
#include "ui/plot_layout.h"
#include "ui/time_view.h"
#include "ui_test_support.h"

using namespace attnscope;
using namespace attnscope::ui;

namespace {

struct DrawnText {
  QString text;
  QRectF rect;  // logical coordinates of the painter
  QRectF clip;  // logical; null when no clip
  QRectF device_rect;
};

class TextRecorder : public QPaintEngine {
 public:
  TextRecorder() : QPaintEngine(QPaintEngine::AllFeatures) {}
  bool begin(QPaintDevice*) override { return true; }
  bool end() override { return true; }
  void updateState(const QPaintEngineState&) override {}
  void drawPixmap(const QRectF&, const QPixmap&, const QRectF&) override {}
  void drawImage(const QRectF&, const QImage&, const QRectF&, Qt::ImageConversionFlags) override {}
  void drawPath(const QPainterPath&) override {}
  void drawPolygon(const QPointF*, int, PolygonDrawMode) override {}
  void drawLines(const QLineF*, int) override {}
  void drawRects(const QRectF*, int) override {}
  void drawEllipse(const QRectF&) override {}
  void drawPoints(const QPointF*, int) override {}
  Type type() const override { return User; }
  void drawTextItem(const QPointF& p, const QTextItem& ti) override {
    DrawnText t;
    t.text = ti.text();
    t.rect = QRectF(p.x(), p.y() - ti.ascent(), ti.width(), ti.ascent() + ti.descent());
    if (painter()->hasClipping()) t.clip = painter()->clipBoundingRect();
    t.device_rect = painter()->combinedTransform().mapRect(t.rect);
    texts.push_back(t);
  }
  std::vector<DrawnText> texts;
};

class RecordingDevice : public QPaintDevice {
 public:
  RecordingDevice(QSize size, int dpi) : size_(size), dpi_(dpi) {}
  QPaintEngine* paintEngine() const override { return &engine_; }
  std::vector<DrawnText>& texts() { return engine_.texts; }

 protected:
  int metric(PaintDeviceMetric m) const override {
    switch (m) {
      case PdmWidth: return size_.width();
      case PdmHeight: return size_.height();
      case PdmWidthMM: return qRound(size_.width() * 25.4 / dpi_);
      case PdmHeightMM: return qRound(size_.height() * 25.4 / dpi_);
      case PdmNumColors: return INT_MAX;
      case PdmDepth: return 32;
      case PdmDpiX:
      case PdmDpiY:
      case PdmPhysicalDpiX:
      case PdmPhysicalDpiY: return dpi_;
      case PdmDevicePixelRatio: return 1;
      default: return QPaintDevice::metric(m);
    }
  }

 private:
  QSize size_;
  int dpi_;
  mutable TextRecorder engine_;
};

// Every text the plot should show: titles, axis labels, tick labels, legend entries.
QStringList expectedTexts(QCustomPlot* plot) {
  QStringList out;
  if (auto* t = plotTitle(plot)) out << t->text();
  if (auto* c = plotContext(plot)) out << c->text();
  for (QCPAxisRect* rect : plot->axisRects())
    for (QCPAxis* axis : rect->axes()) {
      if (!axis->visible()) continue;
      if (!axis->label().isEmpty()) out << axis->label();
      if (axis->tickLabels())
        for (int i = 0; i < axis->tickVector().size() && i < axis->tickVectorLabels().size(); ++i)
          if (axis->range().contains(axis->tickVector().at(i))) out << axis->tickVectorLabels().at(i);
    }
  if (plot->legend && plot->legend->visible())
    for (int i = 0; i < plot->legend->itemCount(); ++i)
      if (auto* item = qobject_cast<QCPPlottableLegendItem*>(plot->legend->item(i))) out << item->plottable()->name();
  return out;
}

}  // namespace

class TestExportDpi : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    Store store(dir_.filePath("dpi.sqlite").toStdString());
    // Big points are skipped by the budget, so the charts reach hundreds of MiB (marked at the
    // prediction) without running them.
    SweepSpec spec = test::tinySweep();
    spec.axes = {{"heads", {"1", "8"}}, {"seq", {"16", "2048"}}};
    spec.base.width = 16;  // a long context line (it must wrap, not be clipped)
    spec.memory_budget = 8ll << 20;
    snap_ = loadSweepSnapshot(store, test::runSweepInto(store, spec));
    QVERIFY(snap_);
    memory_.setSweeps({snap_});
    time_.setSweeps({snap_});
    heatmap_.setSweeps({snap_});
    // The Breakdown's phase bars and legend too: its traces come from the store.
    breakdown_.setEventSource([db = dir_.filePath("dpi.sqlite").toStdString()](int64_t id) {
      return Store(db, StoreMode::read).events(id);
    });
    breakdown_.setSweeps({snap_});
    QVERIFY(breakdown_.phasePlot()->plottableCount() > 0);
    for (ChartView* v : std::initializer_list<ChartView*>{&memory_, &time_, &heatmap_, &breakdown_}) v->resize(1400, 600);
  }

  void textIsWhole_data() {
    QTest::addColumn<int>("dpi");
    QTest::addColumn<int>("view");
    for (int dpi : {72, 96, 150, 300})
      for (int view = 0; view < 4; ++view)
        QTest::addRow("%d dpi, view %d", dpi, view) << dpi << view;
  }
  void textIsWhole() {
    QFETCH(int, dpi);
    QFETCH(int, view);
    ChartView* views[] = {&memory_, &time_, &heatmap_, &breakdown_};
    ChartView* v = views[view];
    // A 10 x 4.4 inch figure at every DPI.
    const QSize size(dpi * 10, dpi * 44 / 10);
    RecordingDevice device(size, layoutDpi());
    QVERIFY(renderPlots(&device, size, dpi, v->plots(), v->exportColumns()));
    QStringList drawn;
    for (const DrawnText& t : device.texts()) {
      drawn << t.text;
      if (t.text.trimmed().isEmpty()) continue;
      // Whole inside the clip in force (1 logical px of slack for rounding) and on the image.
      if (!t.clip.isNull())
        QVERIFY2(t.clip.adjusted(-1, -1, 1, 1).contains(t.rect),
                 qPrintable(QString("'%1' at %2,%3 %4x%5 clipped by %6,%7 %8x%9")
                                .arg(t.text)
                                .arg(t.rect.x()).arg(t.rect.y()).arg(t.rect.width()).arg(t.rect.height())
                                .arg(t.clip.x()).arg(t.clip.y()).arg(t.clip.width()).arg(t.clip.height())));
      QVERIFY2(QRectF(QPointF(0, 0), QSizeF(size)).adjusted(-1, -1, 1, 1).contains(t.device_rect),
               qPrintable(QString("'%1' runs off the image").arg(t.text)));
    }
    for (QCustomPlot* plot : v->plots())
      for (const QString& want : expectedTexts(plot))
        for (const QString& line : want.split('\n'))
          if (!line.trimmed().isEmpty()) QVERIFY2(drawn.contains(line), qPrintable("not drawn: '" + line + "'"));
  }

  void byteLabelsAreRight() {
    // The memory view's byte axis: every label is a whole size and the largest point's size is
    // spanned (256 MiB region for cpu.reference at 8 heads x 2048).
    const QSize size(3000, 1320);
    RecordingDevice device(size, layoutDpi());
    QVERIFY(renderPlots(&device, size, 300, memory_.plots(), 2));
    const QRegularExpression bytes("^\\d+(\\.\\d+)? (B|KiB|MiB|GiB)$");
    QStringList labels = memory_.headsPlot()->yAxis->tickVectorLabels();
    QVERIFY(!labels.isEmpty());
    bool mib = false;
    for (const QString& l : labels) {
      QVERIFY2(bytes.match(l).hasMatch(), qPrintable(l));
      mib = mib || l.endsWith("MiB");
    }
    QVERIFY(mib);
    QVERIFY(memory_.headsPlot()->yAxis->range().upper > 256.0 * (1 << 20));
  }

  void everyChartCarriesItsContext() {
    const QString want = QString("S%1 tiny \u00b7 batch 1 \u00b7 width 16 = heads x head_dim \u00b7 fp32 \u00b7 mask none "
                                 "\u00b7 cpu.reference, cpu.flash")
                             .arg(snap_->info.id);
    QCOMPARE(QString::fromStdString(chartContext({snap_})), want);
    for (QCustomPlot* p : memory_.plots() + time_.plots())
      QCOMPARE(plotContext(p)->text().replace('\n', QString(" \u00b7 ")), want);
    // A fixed head_dim is named as such.
    auto fixed = std::make_shared<SweepSnapshot>(*snap_);
    for (RunResult& r : fixed->runs) r.spec.width = 0;
    QVERIFY(QString::fromStdString(chartContext({fixed})).contains(" \u00b7 head_dim 8 \u00b7 "));
    // The heatmap names the backend on each map; the key explains the line styles.
    QCOMPARE(heatmap_.plots().size(), 2);
    QCOMPARE(plotTitle(heatmap_.plots()[0])->text(), QString("cpu.reference"));
    QCOMPARE(plotTitle(heatmap_.plots()[1])->text(), QString("cpu.flash"));
    QStringList key;
    for (int g = 0; g < memory_.headsPlot()->graphCount(); ++g)
      if (memory_.headsPlot()->graph(g)->property("kind").toString() == "key") key << memory_.headsPlot()->graph(g)->name();
    QVERIFY2(key.contains("measured") && key.contains("predicted") && key.contains("skipped (at its prediction)"),
             qPrintable(key.join(", ")));
  }

  void pngScalesWithDpi() {
    // The same figure at 96 DPI and at 72/150/300 DPI shrunk to its size differ only by
    // antialiasing: had text not scaled with the layout, titles and labels would land elsewhere.
    const QSize base(768, 336);
    const QString f96 = dir_.filePath("m96.png");
    QCOMPARE(exportPlots(memory_.plots(), 2, "png", f96, base, 96), QString());
    const QImage ref = QImage(f96).convertToFormat(QImage::Format_Grayscale8);
    for (int dpi : {72, 150, 300}) {
      const QSize size(base.width() * dpi / 96, base.height() * dpi / 96);
      const QString f = dir_.filePath(QString("m%1.png").arg(dpi));
      QCOMPARE(exportPlots(memory_.plots(), 2, "png", f, size, dpi), QString());
      const QImage img(f);
      QCOMPARE(img.size(), size);
      QCOMPARE(qRound(img.dotsPerMeterX() * 0.0254), dpi);
      const QImage small = img.scaled(base, Qt::IgnoreAspectRatio, Qt::SmoothTransformation)
                               .convertToFormat(QImage::Format_Grayscale8);
      double diff = 0;
      for (int y = 0; y < base.height(); ++y)
        for (int x = 0; x < base.width(); ++x)
          diff += std::abs(int(small.constScanLine(y)[x]) - int(ref.constScanLine(y)[x]));
      diff /= base.width() * base.height();
      QVERIFY2(diff < 8.0, qPrintable(QString("%1 dpi: mean grey difference %2").arg(dpi).arg(diff)));
    }
  }

 private:
  QTemporaryDir dir_;
  SweepSnapshotPtr snap_;
  MemoryView memory_;
  TimeView time_;
  HeatmapView heatmap_;
  BreakdownView breakdown_;
};

ATTNSCOPE_UI_TEST_MAIN(TestExportDpi)
#include "test_export_dpi.moc"
