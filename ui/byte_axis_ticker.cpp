#include "ui/byte_axis_ticker.h"

#include "ui/chart_math.h"

namespace attnscope::ui {

double ByteAxisTicker::getTickStep(const QCPRange& range) {
  return niceByteStep(range.size(), qMax(tickCount(), 2));
}

int ByteAxisTicker::getSubTickCount(double) { return log_ ? 0 : 1; }

QString ByteAxisTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
  return QString::fromStdString(formatByteTick(tick));
}

QVector<double> ByteAxisTicker::createTickVector(double tick_step, const QCPRange& range) {
  if (log_) {
    const auto ticks = logByteTicks(qMax(range.lower, 1.0), range.upper, qMax(tickCount(), 2));
    return QVector<double>(ticks.begin(), ticks.end());
  }
  return QCPAxisTicker::createTickVector(tick_step, range);
}

QString TimeAxisTicker::getTickLabel(double tick, const QLocale&, QChar, int) {
  return QString::fromStdString(formatTimeTick(tick));
}

}  // namespace attnscope::ui
