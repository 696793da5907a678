#pragma once
// A QCustomPlot ticker for byte axes: KiB..GiB labels, 1-2-5 x 1024^k steps on linear axes and
// powers of two on log axes (the math lives in chart_math.h).

#include <qcustomplot.h>

namespace attnscope::ui {

class ByteAxisTicker : public QCPAxisTicker {
 public:
  explicit ByteAxisTicker(bool log = false) : log_(log) {}
  void setLog(bool log) { log_ = log; }
  bool isLog() const { return log_; }

 protected:
  double getTickStep(const QCPRange& range) override;
  int getSubTickCount(double tick_step) override;
  QString getTickLabel(double tick, const QLocale& locale, QChar format_char, int precision) override;
  QVector<double> createTickVector(double tick_step, const QCPRange& range) override;

 private:
  bool log_;
};

// Time axis in nanoseconds with "us/ms/s" labels.
class TimeAxisTicker : public QCPAxisTicker {
 protected:
  QString getTickLabel(double tick, const QLocale& locale, QChar format_char, int precision) override;
};

}  // namespace attnscope::ui
