#include "ui/gui_entry.h"

#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <functional>
#include <memory>
#include <utility>
#include <string>

#include <QApplication>
#include <QDir>
#include <QIcon>
#include <QSettings>

#include "core/store/store.h"
#include "ui/chart_export.h"
#include "ui/main_window.h"
#include "ui/memory_view.h"
#include "ui/report_writer.h"
#include "ui/sweep_snapshot.h"

static void initResources() { Q_INIT_RESOURCE(attnscope); }

namespace attnscope {

namespace {

void setIdentity() {
  QCoreApplication::setOrganizationName("AttnScope");
  QCoreApplication::setApplicationName("AttnScope");
  QCoreApplication::setApplicationVersion(QString::fromStdString(appVersion()));
}

// Qt warns on stderr when XDG_RUNTIME_DIR is unset (usual under cron, ssh -T or a container), and
// a headless export never uses that folder: drop exactly that warning, pass everything else on.
QtMessageHandler g_previousHandler = nullptr;
void headlessMessages(QtMsgType type, const QMessageLogContext& context, const QString& message) {
  if (type == QtWarningMsg && message.startsWith(QLatin1String("QStandardPaths: ")) &&
      message.contains(QLatin1String("XDG_RUNTIME_DIR")))
    return;
  if (g_previousHandler) g_previousHandler(type, context, message);
}

// A QApplication for headless rendering, made only when the caller has none.
class HeadlessApp {
 public:
  HeadlessApp() {
    if (QCoreApplication::instance()) return;
    g_previousHandler = qInstallMessageHandler(headlessMessages);
    if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
    static int argc = 1;
    static char name[] = "attnscope";
    static char* argv[] = {name, nullptr};
    app_ = std::make_unique<QApplication>(argc, argv);
    setIdentity();
  }

 private:
  std::unique_ptr<QApplication> app_;
};

ui::SweepSnapshotPtr loadSweep(const std::string& db_path, int64_t sweep_id, std::string& error) {
  try {
    Store store(db_path, StoreMode::read);
    auto snap = ui::loadSweepSnapshot(store, sweep_id);
    if (!snap) error = "no sweep with id " + std::to_string(sweep_id) + " in " + db_path;
    return snap;
  } catch (const std::exception& e) {
    error = e.what();
    return nullptr;
  }
}

}  // namespace

// Without XDG_RUNTIME_DIR (cron, ssh -T, containers, `su`) Qt picks /tmp/runtime-USER itself and
// warns about it on every start. The desktop application makes that folder the way the XDG spec
// asks (owned by the user, mode 0700) and names it, so the start is quiet; when the folder cannot
// be made or is not private, the warning is dropped instead (the GUI works without the folder).
void ensureRuntimeDir() {
  if (!qEnvironmentVariableIsEmpty("XDG_RUNTIME_DIR")) return;
  g_previousHandler = qInstallMessageHandler(headlessMessages);
  const std::string dir = QDir::tempPath().toStdString() + "/runtime-" + std::to_string(getuid());
  if (mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) return;
  struct stat st {};
  if (lstat(dir.c_str(), &st) != 0 || !S_ISDIR(st.st_mode) || st.st_uid != getuid() || (st.st_mode & 077) != 0) return;
  qputenv("XDG_RUNTIME_DIR", QByteArray::fromStdString(dir));
}

int runGui(int argc, char** argv, const std::string& db_path, bool explicit_path) {
  ensureRuntimeDir();
  QApplication app(argc, argv);
  setIdentity();
  initResources();
  app.setWindowIcon(QIcon(":/attnscope/icons/attnscope.svg"));
  QString path = QString::fromStdString(db_path);
  // The default database gives way to the one the user opened last time; an explicit --db or
  // ATTNSCOPE_DB wins.
  const QString last = QSettings().value("db/path").toString();
  if (!explicit_path && !last.isEmpty() && QFileInfo::exists(last)) path = last;
  if (!path.isEmpty()) QDir().mkpath(QFileInfo(path).absolutePath());
  ui::MainWindow window(path);
  window.show();
  return app.exec();
}

namespace {

// The memory view of a sweep exported at `px` (laid out on screen at `view` px). The sizes are
// computed once the application exists (exportPixels needs its screen's DPI).
std::string exportMemoryView(const std::string& db_path, int64_t sweep_id, const std::string& format,
                             const std::string& out_file, int dpi, const std::function<std::pair<QSize, QSize>()>& sizes) {
  HeadlessApp app;
  std::string error;
  auto snap = loadSweep(db_path, sweep_id, error);
  if (!snap) return error;
  const auto [view_px, px] = sizes();
  ui::MemoryView view;
  view.resize(view_px);
  view.setSweeps({snap});
  return ui::exportPlots(view.plots(), view.exportColumns(), QString::fromStdString(format), QString::fromStdString(out_file), px, dpi)
      .toStdString();
}

}  // namespace

std::string exportSweepChart(const std::string& db_path, int64_t sweep_id, const std::string& format,
                             const std::string& out_file, int width_px, int height_px, int dpi) {
  return exportMemoryView(db_path, sweep_id, format, out_file, dpi, [&] {
    return std::pair{QSize(width_px, height_px), QSize(width_px, height_px)};
  });
}

std::string exportSweepChartPrinted(const std::string& db_path, int64_t sweep_id, const std::string& format,
                                    const std::string& out_file, double width_in, double height_in, int dpi) {
  return exportMemoryView(db_path, sweep_id, format, out_file, dpi, [&] {
    const QSizeF inches(width_in, height_in);
    // On "screen" the layout's pixels; in the file PNG pixels at dpi, or the layout's for vectors.
    return std::pair{ui::exportPixels(inches, "svg", dpi), ui::exportPixels(inches, QString::fromStdString(format), dpi)};
  });
}

std::string writeSweepReport(const std::string& db_path, int64_t sweep_id, const std::string& out_dir) {
  HeadlessApp app;
  std::string error;
  auto snap = loadSweep(db_path, sweep_id, error);
  if (!snap) return error;
  const QString dir = QString::fromStdString(out_dir);
  if (!QDir().mkpath(dir)) return "cannot create " + out_dir;
  auto events = [db_path](int64_t run_id) { return Store(db_path, StoreMode::read).events(run_id); };
  return ui::writeReport({snap}, QDir(dir).filePath("report.pdf"), dir, OutputRule::entry, events).toStdString();
}

bool displayAvailable() {
  auto set = [](const char* name) {
    const char* v = std::getenv(name);
    return v && *v;
  };
  return set("DISPLAY") || set("WAYLAND_DISPLAY");
}

}  // namespace attnscope
