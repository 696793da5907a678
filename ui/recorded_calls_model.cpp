#include "ui/recorded_calls_model.h"
#include "ui/chart_math.h"

#include <algorithm>

#include <QColor>
#include <QFont>

#include "core/base/format.h"
#include "ui/plot_style.h"

namespace attnscope::ui {

namespace {

QString qs(const std::string& s) { return QString::fromStdString(s); }

std::string bytesCell(int64_t b) { return b < 0 ? "-" : formatBytes(b); }
std::string meanCell(const RecordedStats& s) { return s.count > 0 ? durationText(s.meanTime()) : "-"; }

// A kernel cell's tint: its Dispatch colour, light enough that the text on it stays readable on
// a light and on a dark base. Nothing for what is not a kernel ("?", an op's name).
QVariant kernelTint(const std::string& kernel) {
  if (!torch_dispatch::parseSdpaKernel(kernel) && kernel != "raises") return {};
  QColor c = kernelColor(kernel);
  c.setAlpha(70);
  return c;
}

}  // namespace

RecordedCallsModel::RecordedCallsModel(QObject* parent) : QAbstractTableModel(parent) {}

void RecordedCallsModel::setRecording(std::shared_ptr<const ExplainedRecording> recording) {
  beginResetModel();
  recording_ = std::move(recording);
  endResetModel();
}

const ExplainedCall* RecordedCallsModel::call(int row) const {
  if (!recording_ || row < 0 || row >= static_cast<int>(recording_->calls.size())) return nullptr;
  return &recording_->calls[static_cast<size_t>(row)];
}

bool RecordedCallsModel::columnSaysNothing(int column) const {
  if (!recording_) return column == TargetColumn || column == ChangeColumn;
  const auto& calls = recording_->calls;
  switch (column) {
    case KvShapeColumn:
      return std::none_of(calls.begin(), calls.end(), [](const ExplainedCall& e) { return e.call->k.shape != e.call->q.shape; });
    case BackwardColumn:
      return std::none_of(calls.begin(), calls.end(), [](const ExplainedCall& e) { return e.call->backward.has_value(); });
    case TargetColumn:
    case ChangeColumn: return !recording_->target;
  }
  return false;
}

int RecordedCallsModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() || !recording_ ? 0 : static_cast<int>(recording_->calls.size());
}

int RecordedCallsModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RecordedCallsModel::text(const ExplainedCall& e, int column) const {
  const RecordedCall& c = *e.call;
  const CallVerdict& v = e.recorded;
  switch (column) {
    case SiteColumn: return qs(c.site);
    case ModuleColumn: return c.module.empty() ? QStringLiteral("-") : qs(c.module);
    case CountColumn: return QString::number(c.forward.count);
    case QShapeColumn: return qs(shapeText(c.q.shape));
    case KvShapeColumn: return qs(shapeText(c.k.shape));
    case DtypeColumn: return qs(c.q.dtype);
    case MaskColumn: return qs(recordedMaskText(c));
    case RanColumn: return ranKernel(c).empty() ? QStringLiteral("?") : qs(ranKernel(c));
    case PredictedColumn:
      return (v.predicted.empty() ? QStringLiteral("?") : qs(v.predicted)) + (v.mismatch ? tr(" (WRONG)") : QString());
    case MeasuredColumn: return c.forward.memory_measured > 0 ? qs(formatBytes(c.forward.bytes_max)) : QStringLiteral("-");
    case PredictedBytesColumn: return qs(bytesCell(v.predicted_bytes));
    case TimeColumn: return qs(meanCell(c.forward));
    case BackwardColumn: return c.backward ? qs(meanCell(*c.backward)) : QStringLiteral("-");
    case TargetColumn: return e.target ? qs(onTargetText(*e.target)) : QString();
    case ChangeColumn: {
      const std::string change = e.target ? kernelChange(v, *e.target) : std::string();
      return change.empty() ? QStringLiteral("-") : qs(change);
    }
    case FixColumn:
      return v.cheapest ? qs(v.cheapest->change + " (" + formatBytes(v.cheapest->extra_bytes) + ")") : QStringLiteral("-");
  }
  return {};
}

QVariant RecordedCallsModel::sortKey(const ExplainedCall& e, int column) const {
  const RecordedCall& c = *e.call;
  switch (column) {
    case CountColumn: return QVariant::fromValue<qlonglong>(c.forward.count);
    case MeasuredColumn: return QVariant::fromValue<qlonglong>(c.forward.bytes_max);
    case PredictedBytesColumn: return QVariant::fromValue<qlonglong>(e.recorded.predicted_bytes);
    case TimeColumn: return c.forward.meanTime();
    case BackwardColumn: return c.backward ? c.backward->meanTime() : -1.0;
    case TargetColumn: return QVariant::fromValue<qlonglong>(e.target ? e.target->predicted_bytes : -1);
  }
  return text(e, column);
}

QVariant RecordedCallsModel::data(const QModelIndex& index, int role) const {
  const ExplainedCall* e = index.isValid() && index.model() == this ? call(index.row()) : nullptr;
  if (!e) return {};
  const int column = index.column();
  const CallVerdict& v = e->recorded;
  switch (role) {
    case Qt::DisplayRole: return text(*e, column);
    case Qt::EditRole: return sortKey(*e, column);
    case CallRowRole: return QVariant::fromValue<qlonglong>(e->call->row);
    case Qt::TextAlignmentRole:
      switch (column) {
        case CountColumn: case MeasuredColumn: case PredictedBytesColumn: case TimeColumn: case BackwardColumn:
          return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      }
      return {};
    case Qt::BackgroundRole:
      if (column == RanColumn) return kernelTint(ranKernel(*e->call));
      if (column == PredictedColumn) return kernelTint(v.predicted);
      if (column == TargetColumn && e->target) return kernelTint(e->target->predicted);
      return {};
    case Qt::ForegroundRole:
      return column == PredictedColumn && v.mismatch ? QVariant(QColor(0xd0, 0x3a, 0x3a)) : QVariant();
    case Qt::FontRole:
      if (column == PredictedColumn && v.mismatch) {
        QFont bold;
        bold.setBold(true);
        return bold;
      }
      return {};
    case Qt::ToolTipRole:
      if (column == PredictedColumn) {
        QString tip = v.first_rejection.empty() ? qs(v.workload.problem) : qs(v.first_rejection);
        if (v.mismatch)
          tip = tr("torch ran %1 but the explainer predicts %2: a defect in AttnScope's rules for this torch "
                   "(please report it)\n%3")
                    .arg(qs(ranKernel(*e->call)), qs(v.predicted), tip);
        return tip;
      }
      if (column == TargetColumn && e->target) return qs(e->target->first_rejection);
      if (column == FixColumn && v.x) {
        QStringList lines;
        for (const auto& s : v.x->suggestions)
          lines << tr("%1: %2, %3 allocated").arg(qs(s.change), qs(std::string(toString(s.kernel))), qs(formatBytes(s.extra_bytes)));
        return lines.join('\n');
      }
      return text(*e, column);
  }
  return {};
}

QVariant RecordedCallsModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation == Qt::Vertical) {
    const ExplainedCall* e = call(section);
    if (!e) return {};
    if (role == Qt::DisplayRole) return QString::number(e->call->row);
    if (role == Qt::ToolTipRole) return tr("REC%1:%2, as 'attnscope sweep --from' takes it").arg(recording_->recording->id).arg(e->call->row);
    return {};
  }
  if (section < 0 || section >= ColumnCount) return {};
  // The headers of `show REC`.
  static const char* names[] = {"site",      "module", "count", "q [B,H,L,D]", "k/v",      "dtype",
                                "mask",      "torch ran", "predicted", "measured", "predicted mem", "on target",
                                "change",    "time",   "backward", "cheapest fix"};
  static const char* tips[] = {
      "The first frame outside torch",
      "The nn.Module the call was made in",
      "Calls of this signature",
      "q's shape",
      "k's shape, where it differs from q's",
      "q's dtype",
      "The attention mask as passed",
      "The kernel torch ran (or the op's name)",
      "The explainer's kernel for the recorded torch and device; WRONG where torch ran another",
      "What the call allocated at its peak above what was allocated when it began",
      "The explainer's figure for the same",
      "The explainer's kernel and memory on the chosen target",
      "What changes on the target",
      "Mean time of a call",
      "Mean time of its backward pass",
      "The cheapest change the explainer finds, and what the call then allocates"};
  if (role == Qt::DisplayRole) return tr(names[section]);
  if (role == Qt::ToolTipRole) return tr(tips[section]);
  return {};
}

}  // namespace attnscope::ui
