#pragma once
// The one-file PDF report of one or more sweeps: title page with the spec and the environment,
// one page per chart, then the results table. Optionally every chart as a PNG too.

#include <QString>

#include "ui/sweep_snapshot.h"

namespace attnscope::ui {

// png_dir empty: no PNGs. Returns an error message, empty on success.
QString writeReport(const SweepSnapshots& sweeps, const QString& pdf_file, const QString& png_dir);

}  // namespace attnscope::ui
