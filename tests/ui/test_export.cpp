// Export: PNG decodes with the requested size, SVG parses, PDF starts with %PDF and has its
// pages, CSV has one row per point, JSON parses; the headless entry points write the same.

#include <QFile>
#include <QImage>
#include <QRegularExpression>
#include <QXmlStreamReader>

#include <nlohmann/json.hpp>

#include "core/store/store.h"
#include "ui/chart_export.h"
#include "ui/gui_entry.h"
#include "ui/memory_view.h"
#include "ui/report_writer.h"
#include "ui_test_support.h"

using namespace attnscope;
using namespace attnscope::ui;

namespace {

QByteArray readAll(const QString& f) {
  QFile file(f);
  return file.open(QIODevice::ReadOnly) ? file.readAll() : QByteArray();
}

int pdfPages(const QByteArray& pdf) {
  return static_cast<int>(QString::fromLatin1(pdf).count(QRegularExpression("/Type\\s*/Page[^s]")));
}

}  // namespace

class TestExport : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_ = dir_.filePath("export.sqlite");
    Store store(db_.toStdString());
    sweep_ = test::runSweepInto(store, test::tinySweep());
    snap_ = loadSweepSnapshot(store, sweep_);
    QVERIFY(snap_);
    view_.resize(1200, 500);
    view_.setSweeps({snap_});
  }

  void png_data() {
    QTest::addColumn<int>("w");
    QTest::addColumn<int>("h");
    QTest::addColumn<int>("dpi");
    QTest::newRow("default") << 1600 << 700 << 96;
    QTest::newRow("small") << 640 << 300 << 96;
    QTest::newRow("print dpi") << 2400 << 1000 << 300;
  }
  void png() {
    QFETCH(int, w);
    QFETCH(int, h);
    QFETCH(int, dpi);
    const QString f = dir_.filePath(QString("chart-%1.png").arg(w));
    QCOMPARE(exportPlots(view_.plots(), 2, "png", f, QSize(w, h), dpi), QString());
    QImage img(f);
    QVERIFY(!img.isNull());
    QCOMPARE(img.size(), QSize(w, h));
    QCOMPARE(qRound(img.dotsPerMeterX() * 0.0254), dpi);
    // Something was drawn: not a blank white image.
    int non_white = 0;
    for (int y = 0; y < h; y += 7)
      for (int x = 0; x < w; x += 7) non_white += img.pixel(x, y) != qRgb(255, 255, 255);
    QVERIFY(non_white > 50);
  }

  void svg() {
    const QString f = dir_.filePath("chart.svg");
    QCOMPARE(exportPlots(view_.plots(), 2, "svg", f, QSize(1200, 500)), QString());
    QXmlStreamReader xml(readAll(f));
    int elements = 0;
    bool svg_root = false;
    while (!xml.atEnd()) {
      if (xml.readNext() == QXmlStreamReader::StartElement) {
        if (elements++ == 0) svg_root = xml.name() == QLatin1String("svg");
      }
    }
    QVERIFY2(!xml.hasError(), qPrintable(xml.errorString()));
    QVERIFY(svg_root);
    QVERIFY(elements > 20);
  }

  void pdf() {
    const QString f = dir_.filePath("chart.pdf");
    QCOMPARE(exportPlots(view_.plots(), 2, "", f, QSize(1200, 500)), QString());
    const QByteArray pdf = readAll(f);
    QVERIFY(pdf.startsWith("%PDF"));
    QCOMPARE(pdfPages(pdf), 1);
  }

  void badFormatAndPath() {
    QVERIFY(!exportPlots(view_.plots(), 2, "bmpx", dir_.filePath("x.bmpx"), QSize(100, 100)).isEmpty());
    QVERIFY(!exportPlots(view_.plots(), 2, "png", "/nonexistent-dir/x.png", QSize(100, 100)).isEmpty());
  }

  void csvHasOneRowPerPoint() {
    const QString f = dir_.filePath("data.csv");
    QCOMPARE(exportCsv({snap_}, f), QString());
    const QStringList lines = QString::fromUtf8(readAll(f)).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.size(), 1 + 8);
    QVERIFY(lines.front().startsWith("sweep_id,"));
    for (int i = 1; i < lines.size(); ++i) QVERIFY(lines[i].startsWith(QString::number(sweep_)));
  }

  void jsonParses() {
    const QString f = dir_.filePath("data.json");
    QCOMPARE(exportJson({snap_}, f), QString());
    const auto j = nlohmann::json::parse(readAll(f).toStdString());
    QCOMPARE(static_cast<int>(j.at("runs").size()), 8);
  }

  void reportHasEveryPage() {
    const QString pdf = dir_.filePath("report/report.pdf");
    QCOMPARE(QString::fromStdString(writeSweepReport(db_.toStdString(), sweep_, dir_.filePath("report").toStdString())),
             QString());
    const QByteArray bytes = readAll(pdf);
    QVERIFY(bytes.startsWith("%PDF"));
    // Title page, one page per chart, at least one results page.
    int charts = 0;
    for (const QString& png : QDir(dir_.filePath("report")).entryList({"*.png"})) {
      QImage img(dir_.filePath("report/" + png));
      QCOMPARE(img.size(), QSize(1600, 700));
      ++charts;
    }
    QVERIFY(charts >= 1);
    // The cover holds the memory chart; then one page per other chart, the phase tables of the
    // representative points (2 here: one per backend, on one page) and the results table.
    QCOMPARE(pdfPages(bytes), charts + 2);
  }

  void headlessChartExport() {
    const QString f = dir_.filePath("cli.png");
    QCOMPARE(QString::fromStdString(exportSweepChart(db_.toStdString(), sweep_, "png", f.toStdString(), 1000, 400)),
             QString());
    QCOMPARE(QImage(f).size(), QSize(1000, 400));
    QVERIFY(!exportSweepChart(db_.toStdString(), 999999, "png", f.toStdString()).empty());
    QVERIFY(!exportSweepChart(dir_.filePath("missing.sqlite").toStdString(), 1, "png", f.toStdString()).empty());
  }

 private:
  QTemporaryDir dir_;
  QString db_;
  int64_t sweep_ = 0;
  SweepSnapshotPtr snap_;
  MemoryView view_;
};

ATTNSCOPE_UI_TEST_MAIN(TestExport)
#include "test_export.moc"
