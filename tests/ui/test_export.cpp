// Export: PNG decodes with the requested size, SVG parses, PDF starts with %PDF and has its
// pages, CSV has one row per point, JSON parses; the headless entry points write the same.

#include <QComboBox>
#include <QDoubleSpinBox>
#include <QFile>
#include <QImage>
#include <QRegularExpression>
#include <QXmlStreamReader>

#include <nlohmann/json.hpp>

#include "core/store/store.h"
#include "ui/chart_export.h"
#include "ui/export_dialog.h"
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

  // Exports sized for print: the same printed size at 72/150/300 DPI, in every format. PNG gets
  // inches x dpi pixels and says its DPI, a PDF page is inches x 72 points, an SVG names its
  // width and height in mm; the dialog converts units and presets to those inches.
  void printedSize_data() {
    QTest::addColumn<int>("dpi");
    for (int dpi : {72, 150, 300}) QTest::addRow("%d dpi", dpi) << dpi;
  }
  void printedSize() {
    QFETCH(int, dpi);
    const QSizeF inches(3.5, 2.6);  // a journal column
    const QString png = dir_.filePath(QString("column-%1.png").arg(dpi));
    QCOMPARE(exportPlots({view_.plots().front()}, 1, "png", png, exportPixels(inches, "png", dpi), dpi), QString());
    const QImage img(png);
    QCOMPARE(img.size(), QSize(qRound(3.5 * dpi), qRound(2.6 * dpi)));
    QCOMPARE(qRound(img.dotsPerMeterX() * 0.0254), dpi);
    QVERIFY(std::abs(img.width() / (img.dotsPerMeterX() * 0.0254) - 3.5) < 0.01);  // dots per metre are integers

    const QString pdf = dir_.filePath(QString("column-%1.pdf").arg(dpi));
    QCOMPARE(exportPlots({view_.plots().front()}, 1, "pdf", pdf, exportPixels(inches, "pdf", dpi), dpi), QString());
    const auto box = QRegularExpression("MediaBox\\s*\\[\\s*0\\s+0\\s+([0-9.]+)\\s+([0-9.]+)").match(QString::fromLatin1(readAll(pdf)));
    QVERIFY(box.hasMatch());
    QVERIFY2(std::abs(box.captured(1).toDouble() - 3.5 * 72) <= 1 && std::abs(box.captured(2).toDouble() - 2.6 * 72) <= 1,
             qPrintable(box.captured(0)));

    const QString svg = dir_.filePath(QString("column-%1.svg").arg(dpi));
    QCOMPARE(exportPlots({view_.plots().front()}, 1, "svg", svg, exportPixels(inches, "svg", dpi), dpi), QString());
    QXmlStreamReader xml(readAll(svg));
    while (!xml.atEnd() && xml.readNext() != QXmlStreamReader::StartElement) {}
    QCOMPARE(xml.name(), QLatin1String("svg"));
    const QString w = xml.attributes().value("width").toString(), h = xml.attributes().value("height").toString();
    QVERIFY2(w.endsWith("mm") && std::abs(w.chopped(2).toDouble() - 88.9) < 0.5, qPrintable(w));
    QVERIFY2(h.endsWith("mm") && std::abs(h.chopped(2).toDouble() - 66.04) < 0.5, qPrintable(h));
  }

  void exportDialogUnits() {
    ExportDialog dlg(dir_.filePath("x.png"), QSizeF(7.2, 3.2), QSize(1200, 500));
    QCOMPARE(dlg.findChild<QComboBox*>("exportPreset")->currentText(), QString("Journal page width (7.2 x 3.2 in)"));
    dlg.setDpi(300);
    QCOMPARE(dlg.size(), QSize(2160, 960));
    dlg.setUnit("mm");
    QCOMPARE(dlg.findChild<QDoubleSpinBox*>("exportWidth")->value(), 182.9);  // 7.2 in, to 0.1 mm
    QVERIFY(std::abs(dlg.inches().width() - 7.2) < 0.005);
    dlg.setUnit("px");
    QCOMPARE(dlg.findChild<QDoubleSpinBox*>("exportWidth")->value(), 2160.0);
    dlg.setDpi(150);  // pixels shown at the new DPI: the printed size stays
    QCOMPARE(dlg.findChild<QDoubleSpinBox*>("exportWidth")->value(), 1080.0);
    QVERIFY(std::abs(dlg.inches().width() - 7.2) < 0.005);
    dlg.choosePreset(1);  // journal column
    QCOMPARE(dlg.size(), QSize(525, 390));
    QVERIFY2(dlg.summary().contains("525") && dlg.summary().contains("3.50") && dlg.summary().contains("150 DPI"),
             qPrintable(dlg.summary()));
    dlg.choosePreset(0);  // as on screen: 1200 x 500 px at 96 per inch
    QVERIFY(std::abs(dlg.inches().width() - 12.5) < 0.01);
    dlg.findChild<QComboBox*>()->setCurrentText("pdf");
    QCOMPARE(dlg.size(), QSize(1200, 500));  // vector: the layout's pixels, a 900 x 375 pt page
    QVERIFY2(dlg.summary().contains("900") && dlg.summary().contains("375"), qPrintable(dlg.summary()));
    dlg.setCharts({"Peak memory vs number of heads", "Peak memory vs sequence length"});
    QCOMPARE(dlg.chart(), -1);
    dlg.findChild<QComboBox*>("exportChart")->setCurrentIndex(2);
    QCOMPARE(dlg.chart(), 1);
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
