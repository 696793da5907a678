#pragma once
// The one-file PDF report of one or more sweeps: title page with the spec and the environment,
// one page per chart, then the results table. Optionally every chart as a PNG too.

#include <QString>

#include "ui/sweep_snapshot.h"
#include "ui/timeline_view.h"

namespace attnscope::ui {

// png_dir empty: no PNGs. events loads a run's trace for the timeline page, which shows the run
// with the largest measured peak. Returns an error message, empty on success.
QString writeReport(const SweepSnapshots& sweeps, const QString& pdf_file, const QString& png_dir,
                    const TimelineView::EventLoader& events);

}  // namespace attnscope::ui
