#pragma once
// Entry points of the desktop application, called by app/main.cpp.

#include <cstdint>
#include <string>

namespace attnscope {

// Opens the main window on db_path (creating the database if missing); runs the Qt event loop.
// explicit_path: the user named the database (--db or ATTNSCOPE_DB); otherwise the one opened
// last time is reopened when it still exists.
int runGui(int argc, char** argv, const std::string& db_path, bool explicit_path);

// Headless chart rendering for `attnscope export ID --format png|svg|pdf --out FILE` (sweep id):
// renders the memory view (peak vs heads and peak vs seq side by side) of that sweep. Returns an
// error message, empty on success. Creates its own QApplication (offscreen) if none exists.
std::string exportSweepChart(const std::string& db_path, int64_t sweep_id, const std::string& format,
                             const std::string& out_file, int width_px = 1600, int height_px = 700,
                             int dpi = 96);
// The same at a printed size (inches): PNG pixels are inches x dpi, PDF pages inches x 72 points,
// SVG width and height in mm (exportPixels in ui/chart_export.h).
std::string exportSweepChartPrinted(const std::string& db_path, int64_t sweep_id, const std::string& format,
                                    const std::string& out_file, double width_in, double height_in, int dpi);

// Writes every chart as PNG plus one PDF report (spec, environment, every chart, results table)
// for a sweep into out_dir. Returns an error message, empty on success; throws OutputRefused
// (core/files/output_file.h), before writing anything, when a name it writes is taken by anything but a
// regular file.
std::string writeSweepReport(const std::string& db_path, int64_t sweep_id, const std::string& out_dir);

// Without XDG_RUNTIME_DIR, makes the private runtime folder Qt would otherwise warn about
// (TMPDIR/runtime-UID, mode 0700) and names it; call before the QApplication is made (runGui
// does; so does the screenshot tool).
void ensureRuntimeDir();

// A real display (DISPLAY or WAYLAND_DISPLAY set), for the README's main command (scripts/main.sh).
bool displayAvailable();

}  // namespace attnscope
