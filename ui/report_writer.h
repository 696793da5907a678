#pragma once
// The one-file PDF report of one or more sweeps: title page with the spec and the environment,
// one page per chart, then the results table. Optionally every chart as a PNG too.

#include <QString>

#include "core/files/output_file.h"
#include "ui/sweep_snapshot.h"
#include "ui/timeline_view.h"

namespace attnscope::ui {

// png_dir empty: no PNGs. events loads a run's trace for the timeline page, which shows the run
// with the largest measured peak. Every file is written under a temporary name and renamed when
// complete; `rule` says what may already be at their names (OutputRule::file for a PDF the user
// named, OutputRule::entry for the files of a report folder), and every name is checked before
// anything is written: throws OutputRefused then. SIGINT or SIGTERM while the PDF is drawn stops
// it at the next page and removes its temporary (core/files/output_interrupt.h). Returns an error
// message, empty on success.
QString writeReport(const SweepSnapshots& sweeps, const QString& pdf_file, const QString& png_dir, OutputRule rule,
                    const TimelineView::EventLoader& events);

}  // namespace attnscope::ui
