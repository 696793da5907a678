#pragma once
// The "Run:" chooser that the per-run views (Breakdown, Timeline) share.

#include <QComboBox>

#include "ui/sweep_snapshot.h"

namespace attnscope::ui {

// Refills the chooser with the runs of `sweeps` (only runs with status ok when ok_only), keeping
// the current run when it is still there, else choosing the last (the largest point of a sweep
// in grid order). Signals are blocked while it fills. Returns the previously current run id.
qlonglong fillRunChooser(QComboBox* box, const SweepSnapshots& sweeps, bool ok_only);
// Makes run_id current if the chooser holds it (emits currentIndexChanged when it changes).
void selectRunIn(QComboBox* box, qint64 run_id);

}  // namespace attnscope::ui
