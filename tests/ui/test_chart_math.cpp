// Table-driven tests of the chart arithmetic: byte ticks and labels, time labels, time-to-pixel
// mapping, zoom, and merging timeline intervals to pixel resolution.

#include <cmath>

#include <QtTest>

#include "ui/chart_math.h"
#include "ui/plot_style.h"
#include <set>

using namespace attnscope::ui;

class TestChartMath : public QObject {
  Q_OBJECT
 private Q_SLOTS:
  void byteTick_data() {
    QTest::addColumn<double>("bytes");
    QTest::addColumn<QString>("label");
    QTest::newRow("zero") << 0.0 << "0";
    QTest::newRow("bytes") << 512.0 << "512 B";
    QTest::newRow("one KiB") << 1024.0 << "1 KiB";
    QTest::newRow("1.5 KiB") << 1536.0 << "1.5 KiB";
    QTest::newRow("MiB") << 3.0 * 1024 * 1024 << "3 MiB";
    QTest::newRow("GiB") << 12.0 * 1024 * 1024 * 1024 << "12 GiB";
    QTest::newRow("fraction GiB") << 0.25 * 1024 * 1024 * 1024 << "256 MiB";
    QTest::newRow("three digits") << 1000.0 * 1024 << "1000 KiB";
    QTest::newRow("negative") << -2048.0 << "-2 KiB";
  }
  void byteTick() {
    QFETCH(double, bytes);
    QFETCH(QString, label);
    QCOMPARE(QString::fromStdString(formatByteTick(bytes)), label);
  }

  void niceStep_data() {
    QTest::addColumn<double>("range");
    QTest::addColumn<int>("ticks");
    QTest::addColumn<double>("step");
    QTest::newRow("small") << 10.0 << 5 << 2.0;
    QTest::newRow("one KiB in 4") << 1024.0 << 4 << 500.0;
    QTest::newRow("10 MiB in 5") << 10.0 * 1048576 << 5 << 2.0 * 1048576;
    QTest::newRow("3 GiB in 6") << 3.0 * 1073741824 << 6 << 1073741824.0;
    QTest::newRow("empty range") << 0.0 << 5 << 1.0;
  }
  void niceStep() {
    QFETCH(double, range);
    QFETCH(int, ticks);
    QFETCH(double, step);
    QCOMPARE(niceByteStep(range, ticks), step);
  }

  void logTicks_data() {
    QTest::addColumn<double>("lo");
    QTest::addColumn<double>("hi");
    QTest::addColumn<int>("target");
    QTest::addColumn<QList<double>>("ticks");
    QTest::newRow("dense") << 1000.0 << 9000.0 << 8 << QList<double>{1024, 2048, 4096, 8192};
    QTest::newRow("strided") << 1.0 << 1048576.0 << 3 << QList<double>{1, 1024, 1048576};
    QTest::newRow("KiB to GiB") << 1024.0 << 1073741824.0 << 4 << QList<double>{1024, 1048576, 1073741824};
    QTest::newRow("no power inside") << 1100.0 << 1200.0 << 5 << QList<double>{};
    QTest::newRow("non-positive") << 0.0 << 100.0 << 5 << QList<double>{};
  }
  void logTicks() {
    QFETCH(double, lo);
    QFETCH(double, hi);
    QFETCH(int, target);
    QFETCH(QList<double>, ticks);
    const auto got = logByteTicks(lo, hi, target);
    QCOMPARE(QList<double>(got.begin(), got.end()), ticks);
  }

  void timeTick_data() {
    QTest::addColumn<double>("ns");
    QTest::addColumn<QString>("label");
    QTest::newRow("zero") << 0.0 << "0";
    QTest::newRow("ns") << 250.0 << "250 ns";
    QTest::newRow("us") << 1500.0 << "1.5 us";
    QTest::newRow("ms") << 12e6 << "12 ms";
    QTest::newRow("s") << 2e9 << "2 s";
    QTest::newRow("no exponent") << 999.9e6 << "1000 ms";
  }
  void timeTick() {
    QFETCH(double, ns);
    QFETCH(QString, label);
    QCOMPARE(QString::fromStdString(formatTimeTick(ns)), label);
  }

  void timeToPixel_data() {
    QTest::addColumn<double>("t0");
    QTest::addColumn<double>("t1");
    QTest::addColumn<double>("px0");
    QTest::addColumn<double>("px1");
    QTest::addColumn<double>("t");
    QTest::addColumn<double>("px");
    QTest::newRow("identity") << 0.0 << 100.0 << 0.0 << 100.0 << 42.0 << 42.0;
    QTest::newRow("offset and scale") << 1000.0 << 2000.0 << 50.0 << 550.0 << 1500.0 << 300.0;
    QTest::newRow("left edge") << 1000.0 << 2000.0 << 50.0 << 550.0 << 1000.0 << 50.0;
    QTest::newRow("right edge") << 1000.0 << 2000.0 << 50.0 << 550.0 << 2000.0 << 550.0;
    QTest::newRow("outside") << 0.0 << 10.0 << 0.0 << 100.0 << -1.0 << -10.0;
    QTest::newRow("reversed pixels") << 0.0 << 10.0 << 100.0 << 0.0 << 2.0 << 80.0;
    QTest::newRow("nanoseconds over a second") << 0.0 << 1e9 << 0.0 << 1000.0 << 2.5e8 << 250.0;
  }
  void timeToPixel() {
    QFETCH(double, t0);
    QFETCH(double, t1);
    QFETCH(double, px0);
    QFETCH(double, px1);
    QFETCH(double, t);
    QFETCH(double, px);
    const TimeToPixel m{t0, t1, px0, px1};
    QCOMPARE(m.pixel(t), px);
    QCOMPARE(m.time(px), t);  // the inverse
  }

  void degenerateMapping() {
    const TimeToPixel m{5, 5, 10, 20};
    QCOMPARE(m.pixel(123), 10.0);
    QCOMPARE(TimeToPixel({0, 10, 7, 7}).time(99), 0.0);
  }

  void zoom_data() {
    QTest::addColumn<double>("lo");
    QTest::addColumn<double>("hi");
    QTest::addColumn<double>("anchor");
    QTest::addColumn<double>("factor");
    QTest::addColumn<double>("new_lo");
    QTest::addColumn<double>("new_hi");
    QTest::newRow("in at centre") << 0.0 << 100.0 << 50.0 << 0.5 << 25.0 << 75.0;
    QTest::newRow("in at left edge") << 0.0 << 100.0 << 0.0 << 0.5 << 0.0 << 50.0;
    QTest::newRow("out") << 40.0 << 60.0 << 50.0 << 2.0 << 30.0 << 70.0;
    QTest::newRow("bad factor") << 0.0 << 1.0 << 0.5 << 0.0 << 0.0 << 1.0;
  }
  void zoom() {
    QFETCH(double, lo);
    QFETCH(double, hi);
    QFETCH(double, anchor);
    QFETCH(double, factor);
    QFETCH(double, new_lo);
    QFETCH(double, new_hi);
    const auto [a, b] = zoomRange(lo, hi, anchor, factor);
    QCOMPARE(a, new_lo);
    QCOMPARE(b, new_hi);
  }

  void merge_data() {
    QTest::addColumn<QList<double>>("flat");  // start, end pairs sorted by start
    QTest::addColumn<double>("t1");           // view [0, t1] on 100 px
    QTest::addColumn<QList<double>>("merged");
    QTest::newRow("far apart stay apart") << QList<double>{0, 10, 50, 60} << 100.0 << QList<double>{0, 10, 50, 60};
    QTest::newRow("sub-pixel gap merges") << QList<double>{0, 10, 10.5, 20} << 100.0 << QList<double>{0, 20};
    QTest::newRow("overlap merges") << QList<double>{0, 30, 5, 10, 20, 40} << 100.0 << QList<double>{0, 40};
    QTest::newRow("zoomed out merges more") << QList<double>{0, 10, 50, 60} << 10000.0 << QList<double>{0, 60};
    QTest::newRow("outside dropped") << QList<double>{-50, -40, 10, 20, 200, 300} << 100.0 << QList<double>{10, 20};
    QTest::newRow("straddling kept") << QList<double>{-50, 5} << 100.0 << QList<double>{-50, 5};
  }
  void merge() {
    QFETCH(QList<double>, flat);
    QFETCH(double, t1);
    QFETCH(QList<double>, merged);
    std::vector<Interval> in;
    for (qsizetype i = 0; i + 1 < flat.size(); i += 2) in.push_back({flat[i], flat[i + 1]});
    const auto out = mergeForPixels(in, TimeToPixel{0, t1, 0, 100});
    QList<double> got;
    for (const auto& iv : out) got << iv.start << iv.end;
    QCOMPARE(got, merged);
  }

  void flopsUnit_data() {
    QTest::addColumn<double>("max");
    QTest::addColumn<double>("value");
    QTest::addColumn<QString>("text");
    QTest::newRow("tera") << 3.2e12 << 1.5e12 << "1.50 TFLOP/s";
    QTest::newRow("giga, smaller value in the same unit") << 15e9 << 2.5e6 << "0.0025 GFLOP/s";
    QTest::newRow("giga") << 15e9 << 12.34e9 << "12.3 GFLOP/s";
    QTest::newRow("hundreds") << 450e9 << 250e9 << "250 GFLOP/s";
    QTest::newRow("mega") << 2.5e6 << 2.5e6 << "2.50 MFLOP/s";
    QTest::newRow("nothing ran") << 0.0 << 0.0 << "0 FLOP/s";
  }
  void durations_data() {
    QTest::addColumn<double>("seconds");
    QTest::addColumn<QString>("text");
    QTest::newRow("20 ms keeps its digits") << 0.020 << "20.0 ms";
    QTest::newRow("18.7 ms") << 0.01874 << "18.7 ms";
    QTest::newRow("1.5 ms") << 0.0015 << "1.50 ms";
    QTest::newRow("micro sign") << 123e-6 << QString::fromUtf8("123 \u00b5s");
    QTest::newRow("carry into the next digit") << 9.996e-3 << "10.0 ms";
    QTest::newRow("ns") << 42e-9 << "42 ns";
    QTest::newRow("s") << 2.5 << "2.50 s";
  }
  void durations() {
    QFETCH(double, seconds);
    QFETCH(QString, text);
    QCOMPARE(QString::fromStdString(durationText(seconds)), text);
  }
  void bufferColoursApart() {
    // A training layer's buffers: no two share a colour (x and P, q, k and o used to).
    const char* names[] = {"x", "q", "k", "v", "S", "P", "o", "mask", "lse", "dO", "dS", "dP", "dq", "dk", "dv", "dx"};
    std::set<QRgb> seen;
    for (const char* n : names) QVERIFY2(seen.insert(bufferColor(n).rgb()).second, n);
    QCOMPARE(bufferColor("L3.P"), bufferColor("P"));  // a stack's layers: one colour per buffer
    QCOMPARE(bufferColor("some_scratch"), bufferColor("some_scratch"));
  }
  void onePaletteKeepsItsNamesApart() {
    // The ops a torch run's allocations are named after (the Timeline of torch.cpu.math, seq 512).
    // Ten: as many as the palette keeps apart whatever their hashes.
    const std::vector<std::string> ops{"bmm",   "_softmax",    "isneginf", "mul",      "div",
                                       "clone", "masked_fill", "where",    "_to_copy", "baddbmm"};
    BufferPalette palette;
    std::vector<int> hues;
    for (const std::string& op : ops) hues.push_back(palette(op).hsvHue());
    for (size_t i = 0; i < hues.size(); ++i)
      for (size_t j = 0; j < i; ++j) {
        const int d = std::abs(hues[i] - hues[j]) % 360;
        QVERIFY2(std::min(d, 360 - d) >= BufferPalette::kMinHueGap,
                 qPrintable(QString("%1 and %2: hues %3 and %4").arg(ops[i].c_str(), ops[j].c_str()).arg(hues[i]).arg(hues[j])));
      }
    // The hash alone put two of them together (what the palette is for).
    bool alike = false;
    for (size_t i = 0; i < ops.size(); ++i)
      for (size_t j = 0; j < i; ++j) {
        const int d = std::abs(bufferColor(ops[i]).hsvHue() - bufferColor(ops[j]).hsvHue()) % 360;
        alike = alike || std::min(d, 360 - d) < BufferPalette::kMinHueGap;
      }
    QVERIFY(alike);
    // A name keeps its colour; the known ones keep bufferColor's; a layer's prefix is ignored.
    QCOMPARE(palette("bmm"), palette("bmm"));
    QCOMPARE(palette("S"), bufferColor("S"));
    QCOMPARE(palette("L2.bmm"), palette("bmm"));
    // Two palettes fed one plan first (Breakdown, the Timeline) colour it alike, whatever follows.
    const std::vector<std::string> plan{"x", "w_qkv", "b_qkv", "qkv", "S", "P", "w_o", "y"};
    BufferPalette breakdown(plan);
    std::vector<std::string> timeline_names = plan;
    timeline_names.insert(timeline_names.end(), ops.begin(), ops.end());
    BufferPalette timeline(timeline_names);
    for (const std::string& name : plan) QCOMPARE(breakdown(name), timeline(name));
  }
  void shadesReadOnBothBackgrounds() {
    // Every shade of six variants of every known backend keeps a lightness distance from the plot
    // background: on white (light) and on the dark palette's #26282b.
    const int dark_bg = QColor(0x26, 0x28, 0x2b).lightness();
    for (const char* b : {"cpu.reference", "cpu.flash", "cuda.math", "cuda.chunked", "cuda.flash", "torch.cpu.auto"})
      for (int v = 0; v < 6; ++v) {
        const QColor light = variantColor(b, v, 6, false), dark = variantColor(b, v, 6, true);
        QVERIFY2(255 - light.lightness() >= 40, qPrintable(QString("%1 #%2 on white").arg(b).arg(v)));
        QVERIFY2(dark.lightness() - dark_bg >= 50,
                 qPrintable(QString("%1 #%2 on dark: lightness %3").arg(b).arg(v).arg(dark.lightness())));
        // ...and keeps its hue: never washed out to near white.
        QVERIFY2(dark.hsvSaturation() >= 60, qPrintable(QString("%1 #%2 on dark: saturation %3").arg(b).arg(v).arg(dark.hsvSaturation())));
      }
  }
  void errorsInOneForm() {
    QCOMPARE(QString::fromStdString(errorText(1e-7)), QString("1.00e-07"));
    QCOMPARE(QString::fromStdString(errorText(8.71e-8)), QString("8.71e-08"));
    QCOMPARE(QString::fromStdString(errorText(0)), QString("0.00e+00"));
  }

  void flopsUnit() {
    QFETCH(double, max);
    QFETCH(double, value);
    QFETCH(QString, text);
    QCOMPARE(QString::fromStdString(formatFlopsIn(value, flopsUnitFor(max))), text);
  }

  void millionIntervalsBecomeAtMostPixels() {
    std::vector<Interval> in;
    for (int i = 0; i < 1000000; ++i) in.push_back({i * 10.0, i * 10.0 + 4});
    const auto out = mergeForPixels(in, TimeToPixel{0, 1e7, 0, 1000});
    QVERIFY(out.size() <= 1000);
    QCOMPARE(out.front().start, 0.0);
    QCOMPARE(out.back().end, 9999994.0);
  }
};

// Pure arithmetic: no QApplication, no platform plugin.
QTEST_GUILESS_MAIN(TestChartMath)
#include "test_chart_math.moc"
