// MainWindow's menus and the actions behind them (export, about, compare, open).

#include <QAction>
#include <QApplication>
#include <QDir>
#include <QFileInfo>
#include <QDockWidget>
#include <QFileDialog>
#include <QInputDialog>
#include <QItemSelectionModel>
#include <QKeySequence>
#include <QMenu>
#include <QMenuBar>
#include <QMessageBox>
#include <QPointer>
#include <QThreadPool>
#include <QScreen>
#include <QSettings>
#include <QStatusBar>
#include <QStyleFactory>
#include <QTabWidget>
#include <QTableView>
#include <QToolBar>

#include <nlohmann/json.hpp>
#include <qcustomplot.h>

#include "core/export/chrome_trace.h"
#include "core/result/environment.h"
#include "core/files/output_file.h"
#include "core/store/store.h"
#include "kernels/builtin_session.h"
#include "ui/chart_export.h"
#include "ui/plot_layout.h"
#include "ui/python_dialog.h"
#include "ui/chart_view.h"
#include "ui/compare_view.h"
#include "ui/export_dialog.h"
#include "ui/main_window.h"
#include "ui/memory_view.h"
#include "ui/report_writer.h"
#include "ui/runs_panel.h"
#include "ui/results_table_model.h"
#include "ui/view_factory.h"

namespace attnscope::ui {

bool MainWindow::mergeDatabases(const QStringList& sources) {
  if (!store_ || merging_ || sources.isEmpty()) return false;
  merging_ = true;
  statusBar()->showMessage(tr("Merging %n database(s) into %1...", nullptr, static_cast<int>(sources.size())).arg(databasePath()));
  QPointer<MainWindow> self(this);
  std::vector<std::string> paths;
  for (const QString& s : sources) paths.push_back(s.toStdString());
  QThreadPool::globalInstance()->start([self, db = databasePath().toStdString(), paths] {
    QStringList lines;
    int refused = 0;
    try {
      Store into(db, StoreMode::existing);
      for (size_t i = 0; i < paths.size(); ++i) {
        QMetaObject::invokeMethod(qApp, [self, i, n = paths.size(), name = QString::fromStdString(paths[i])] {
          if (self) self->statusBar()->showMessage(tr("Merging %1 of %2: %3").arg(i + 1).arg(n).arg(QFileInfo(name).fileName()));
        }, Qt::QueuedConnection);
        const MergeReport r = into.merge(paths[i]);
        const QString name = QFileInfo(QString::fromStdString(paths[i])).fileName();
        if (!r.refused.empty()) {
          ++refused;
          lines << tr("%1 refused: %2").arg(name, QString::fromStdString(r.refused));
        } else {
          lines << tr("%1: %2 runs added, %3 already here").arg(name).arg(r.runs_added).arg(r.runs_skipped);
        }
      }
    } catch (const std::exception& e) {
      ++refused;
      lines << tr("merge failed: %1").arg(QString::fromStdString(e.what()));
    }
    QMetaObject::invokeMethod(qApp, [self, lines, refused] {
      if (!self) return;
      self->merging_ = false;
      self->last_message_ = lines.join("; ");
      self->statusBar()->showMessage(self->last_message_, 15000);
      if (refused && self->interactive_)
        QMessageBox::warning(self, tr("Merge database"), lines.join("\n"));
      self->listStore();
    }, Qt::QueuedConnection);
  });
  return true;
}

void MainWindow::buildMenus() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open database..."), this, [this] {
    const QString f = QFileDialog::getOpenFileName(this, tr("Open AttnScope database"), QFileInfo(databasePath()).path(),
                                                   tr("AttnScope databases (*.sqlite *.sqlite3 *.db);;All files (*)"));
    if (!f.isEmpty()) openDatabase(f, false);
  });
  open->setShortcut(QKeySequence::Open);
  file->addAction(tr("&New database..."), this, [this] {
    const QString f = QFileDialog::getSaveFileName(this, tr("New AttnScope database"), QFileInfo(databasePath()).path(),
                                                   tr("AttnScope databases (*.sqlite)"));
    if (!f.isEmpty()) openDatabase(f, true);
  });
  file->addAction(tr("&Merge database..."), this, [this] {
    const QStringList f = QFileDialog::getOpenFileNames(
        this, tr("Merge AttnScope databases into this one"), QFileInfo(databasePath()).path(),
        tr("AttnScope databases (*.sqlite *.sqlite3 *.db);;All files (*)"));
    if (!f.isEmpty()) mergeDatabases(f);
  });
  file->addSeparator();
  QAction* export_chart = file->addAction(tr("&Export chart..."), this, &MainWindow::exportChart);
  export_chart->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_E));
  file->addAction(tr("Export data as &CSV..."), this, [this] { exportData("csv"); });
  file->addAction(tr("Export data as &JSON..."), this, [this] { exportData("json"); });
  file->addAction(tr("Export run &trace (Chrome JSON)..."), this, &MainWindow::exportTrace);
  file->addAction(tr("Export PDF &report..."), this, &MainWindow::exportReport);
  file->addSeparator();
  QAction* quit = file->addAction(tr("&Quit"), this, &QWidget::close);
  quit->setShortcut(QKeySequence::Quit);

  QMenu* run = menuBar()->addMenu(tr("&Run"));
  run_action_ = run->addAction(tr("\u25b6 &Run sweep"), this, [this] { startSweep(); });
  run_action_->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_R));
  cancel_action_ = run->addAction(tr("&Cancel sweep"), this, &MainWindow::cancelSweep);
  cancel_action_->setShortcut(QKeySequence(Qt::Key_Escape));
  cancel_action_->setShortcutContext(Qt::ApplicationShortcut);
  cancel_action_->setEnabled(false);
  // Run in plain sight: a first-time user should not have to find it in a menu.
  QToolBar* bar = addToolBar(tr("Run"));
  bar->setObjectName("runToolBar");
  bar->setMovable(false);
  bar->setToolButtonStyle(Qt::ToolButtonTextOnly);
  bar->addAction(run_action_);
  bar->addAction(cancel_action_);
  if (QWidget* button = bar->widgetForAction(run_action_)) button->setObjectName("runButton");
  run->addAction(tr("Com&pare selected sweeps"), this, [this] {
    QList<qint64> ids;
    for (int64_t id : runs_panel_->selectedSweepIds()) ids << id;
    compare(ids);
  });

  QMenu* settings = menuBar()->addMenu(tr("&Settings"));
  settings->addAction(tr("&Python for torch backends..."), this, [this] {
    PythonDialog dlg(QSettings().value("torch/python").toString(), this);
    if (dlg.exec() != QDialog::Accepted) return;
    QSettings().setValue("torch/python", dlg.python());
    builtinBackendSettings().setGuiPython(dlg.python().toStdString());  // and checks again
    updateRunnable();  // the torch backends say "checking ..." until the new probe answers
    if (!dlg.result().isEmpty()) statusBar()->showMessage(dlg.result(), 8000);
  });

  QMenu* view = menuBar()->addMenu(tr("&View"));
  // The dock follows other writers by itself (StoreWatcher); F5 lists and re-reads at once.
  QAction* refresh = view->addAction(tr("&Refresh"), this, [this] {
    listStore();
    refreshShown();
    statusBar()->showMessage(tr("Listed the database again"), 3000);
  });
  refresh->setObjectName("refreshAction");
  refresh->setShortcut(QKeySequence::Refresh);
  QAction* reset = view->addAction(tr("Reset &layout"), this, [this] {
    restoreState(default_state_);
    for (QDockWidget* d : findChildren<QDockWidget*>()) d->setVisible(true);
    if (const QScreen* screen = this->screen()) {
      const QRect avail = screen->availableGeometry();
      showNormal();
      resize(firstStartSize(avail.size()));
      move(avail.center() - rect().center());
    }
  });
  reset->setObjectName("resetLayoutAction");
  // A key per tab, as browsers have: Ctrl+1 ... Ctrl+9, Ctrl+0 the tenth; each tab's tooltip
  // says its key.
  QMenu* go = view->addMenu(tr("&Go to tab"));
  for (int i = 0; i < tabs_->count() && i < 10; ++i) {
    const int key = i == 9 ? Qt::Key_0 : Qt::Key_1 + i;
    QAction* a = go->addAction(tabs_->tabText(i), this, [this, i] { tabs_->setCurrentIndex(i); });
    a->setObjectName(QStringLiteral("tabAction%1").arg(i));
    a->setShortcut(QKeySequence(Qt::CTRL | key));
    tabs_->setTabToolTip(i, tr("%1 (%2)").arg(tabs_->tabText(i), a->shortcut().toString(QKeySequence::NativeText)));
    addAction(a);
  }
  view->addSeparator();
  for (QDockWidget* d : findChildren<QDockWidget*>()) view->addAction(d->toggleViewAction());
  view->addSeparator();
  QAction* dark = view->addAction(tr("&Dark palette"));
  dark->setCheckable(true);
  connect(dark, &QAction::toggled, this, [](bool on) {
    qApp->setStyle(QStyleFactory::create("Fusion"));
    QPalette p = qApp->style()->standardPalette();
    if (on) {
      p.setColor(QPalette::Window, QColor(0x2b, 0x2d, 0x30));
      p.setColor(QPalette::WindowText, QColor(0xe0, 0xe0, 0xe0));
      p.setColor(QPalette::Base, QColor(0x1f, 0x21, 0x24));
      p.setColor(QPalette::AlternateBase, QColor(0x2b, 0x2d, 0x30));
      p.setColor(QPalette::Text, QColor(0xe0, 0xe0, 0xe0));
      p.setColor(QPalette::Button, QColor(0x35, 0x37, 0x3b));
      p.setColor(QPalette::ButtonText, QColor(0xe0, 0xe0, 0xe0));
      p.setColor(QPalette::Highlight, QColor(0x4e, 0x79, 0xa7));
      p.setColor(QPalette::ToolTipBase, QColor(0x35, 0x37, 0x3b));
      p.setColor(QPalette::ToolTipText, QColor(0xe0, 0xe0, 0xe0));
      // Disabled widgets must look disabled: dim text on the same backgrounds.
      const QColor dim(0x80, 0x82, 0x86);
      for (auto role : {QPalette::WindowText, QPalette::Text, QPalette::ButtonText})
        p.setColor(QPalette::Disabled, role, dim);
      p.setColor(QPalette::Disabled, QPalette::Button, QColor(0x2b, 0x2d, 0x30));
      p.setColor(QPalette::PlaceholderText, QColor(0x90, 0x92, 0x96));
    }
    qApp->setPalette(p);
    // Fusion outlines an unchecked box in a darker shade of the window colour: invisible on a
    // dark window, so the backend list looked empty. A light outline keeps them visible.
    qApp->setStyleSheet(on ? QStringLiteral("QCheckBox::indicator:unchecked, QAbstractItemView::indicator:unchecked {"
                                            " border: 1px solid #a0a2a6; border-radius: 2px; background: #1f2124;"
                                            " width: 12px; height: 12px; }")
                           : QString());
    QSettings().setValue("view/dark", on);
  });
  dark->setChecked(QSettings().value("view/dark", false).toBool());

  QMenu* help = menuBar()->addMenu(tr("&Help"));
  QAction* keys = help->addAction(tr("&Keyboard shortcuts"), this, [this] {
    QMessageBox box(QMessageBox::NoIcon, tr("Keyboard shortcuts"), shortcutsHelp(), QMessageBox::Close, this);
    box.setTextFormat(Qt::RichText);
    box.exec();
  });
  keys->setObjectName("shortcutsAction");
  keys->setShortcut(QKeySequence::HelpContents);
  addAction(keys);
  help->addAction(tr("&About AttnScope"), this, &MainWindow::showAbout);
  help->addAction(tr("About &Qt"), qApp, &QApplication::aboutQt);
  addActions({run_action_, cancel_action_, export_chart, open, refresh});
}

namespace {

// Empty when `file` may be written under `rule`; otherwise why not (it is the open database, a
// database, a FIFO for a chart, ...).
QString refusedOutput(const QString& file, const Store* store, OutputRule rule) {
  try {
    checkOutput(file.toStdString(), store ? store->path() : std::string(), rule);
    return {};
  } catch (const OutputRefused& e) {
    return QString::fromStdString(e.what());
  }
}

}  // namespace

void MainWindow::exportChart() {
  auto* view = qobject_cast<ChartView*>(tabs_->currentWidget());
  if (!view) view = memory_view_;
  const QString name = shown_.empty() ? QStringLiteral("chart") : QStringLiteral("sweep%1").arg(shown_.front()->info.id);
  // The folder, format, size and DPI of the last export are kept (a report needs several charts
  // exported the same way); the file name follows the sweep and the chart.
  QSettings settings;
  const QString folder = settings.value("export/folder", QDir::homePath()).toString();
  const QString format = settings.value("export/format", "png").toString();
  // Printed size: as the chart is on screen (at 96 px per inch) until the user picks another.
  const QSize screen = view->size();
  const QSizeF inches =
      settings.value("export/inches", QSizeF(screen.width() / 96.0, screen.height() / 96.0)).toSizeF();
  ExportDialog dlg(QDir(folder).filePath(name + "-" + view->title().toLower() + "." + format), inches, screen, this);
  dlg.setDpi(settings.value("export/dpi", 96).toInt());
  dlg.setUnit(settings.value("export/unit", "in").toString());
  QStringList titles;
  for (QCustomPlot* p : view->plots()) titles << (plotTitle(p) ? plotTitle(p)->text() : p->objectName());
  dlg.setCharts(titles);
  if (dlg.exec() != QDialog::Accepted) return;
  if (const QString why = refusedOutput(dlg.file(), store_.get(), OutputRule::file); !why.isEmpty()) return report(why);
  settings.setValue("export/folder", QFileInfo(dlg.file()).absolutePath());
  settings.setValue("export/format", dlg.format());
  settings.setValue("export/inches", dlg.inches());
  settings.setValue("export/unit", dlg.unit());
  settings.setValue("export/dpi", dlg.dpi());
  QList<QCustomPlot*> plots = view->plots();
  int columns = view->exportColumns();
  if (dlg.chart() >= 0 && dlg.chart() < plots.size()) {
    plots = {plots[dlg.chart()]};
    columns = 1;
  }
  const QString error = exportPlots(plots, columns, dlg.format(), dlg.file(), dlg.size(), dlg.dpi());
  if (!error.isEmpty()) report(error);
  else statusBar()->showMessage(tr("Wrote %1 (%2)").arg(dlg.file(), dlg.summary()), 8000);
}

void MainWindow::exportData(const QString& format) {
  if (shown_.empty()) return report(tr("Select a sweep first."));
  const QString f = QFileDialog::getSaveFileName(this, tr("Export data"), QDir::home().filePath("attnscope." + format),
                                                 format.toUpper() + " (*." + format + ")");
  if (f.isEmpty()) return;
  if (const QString why = refusedOutput(f, store_.get(), OutputRule::text); !why.isEmpty()) return report(why);
  const QString error = format == "csv" ? exportCsv(shown_, f) : exportJson(shown_, f);
  if (!error.isEmpty()) report(error);
  else statusBar()->showMessage(tr("Wrote %1").arg(f), 5000);
}

void MainWindow::exportTrace() {
  const QModelIndexList rows = results_view_->selectionModel()->selectedRows();
  std::vector<int64_t> ids;
  for (const QModelIndex& i : rows) ids.push_back(results_model_->data(i, ResultsTableModel::RunIdRole).toLongLong());
  if (ids.empty()) return report(tr("Select one or more runs in the Results tab first."));
  const QString f = QFileDialog::getSaveFileName(this, tr("Export trace"), QDir::home().filePath("attnscope-trace.json"),
                                                 tr("Chrome trace (*.json)"));
  if (f.isEmpty() || !store_) return;
  if (const QString why = refusedOutput(f, store_.get(), OutputRule::text); !why.isEmpty()) return report(why);
  try {
    std::vector<TraceRun> runs;
    for (int64_t id : ids)
      if (auto r = store_->run(id, true)) runs.push_back(traceRunOf(*r));
    if (const QString error = exportText(f, chromeTrace(runs).dump()); !error.isEmpty()) return report(error);
  } catch (const std::exception& e) {
    return report(QString::fromStdString(e.what()));
  }
  statusBar()->showMessage(tr("Wrote %1").arg(f), 5000);
}

void MainWindow::exportReport() {
  if (shown_.empty()) return report(tr("Select a sweep first."));
  // The folder of the last report (or chart export) is kept; the name follows the sweep.
  QSettings settings;
  const QString folder =
      settings.value("report/folder", settings.value("export/folder", QDir::homePath())).toString();
  const QString f = QFileDialog::getSaveFileName(
      this, tr("Export report"), QDir(folder).filePath(QStringLiteral("sweep%1-report.pdf").arg(shown_.front()->info.id)),
      tr("PDF (*.pdf)"));
  if (f.isEmpty()) return;
  settings.setValue("report/folder", QFileInfo(f).absolutePath());
  if (const QString why = refusedOutput(f, store_.get(), OutputRule::file); !why.isEmpty()) return report(why);
  QString error;
  try {
    error = writeReport(shown_, f, {}, OutputRule::file, [this](int64_t run_id) {
      return store_ ? store_->events(run_id) : std::vector<TraceEvent>{};
    });
  } catch (const OutputRefused& e) {  // what appeared at f since the check above
    error = QString::fromStdString(e.what());
  }
  if (!error.isEmpty()) report(error);
  else statusBar()->showMessage(tr("Wrote %1").arg(f), 5000);
}

QString MainWindow::shortcutsHelp() const {
  // The menus' own shortcuts, read from the actions (so the list cannot go stale), then the
  // Timeline's, which live in its chart.
  QString rows, lanes;
  auto add = [](QString& to, const QString& keys, const QString& what) {
    to += QStringLiteral("<tr><td><b>%1</b></td><td>%2</td></tr>").arg(keys.toHtmlEscaped(), what.toHtmlEscaped());
  };
  auto row = [&](const QString& keys, const QString& what) { add(rows, keys, what); };
  auto lane = [&](const QString& keys, const QString& what) { add(lanes, keys, what); };
  for (QMenu* menu : menuBar()->findChildren<QMenu*>()) {
    for (QAction* a : menu->actions()) {
      if (a->shortcut().isEmpty() || a->menu()) continue;
      QString what = a->text().remove('&');
      if (a->objectName().startsWith("tabAction")) what = tr("the %1 tab").arg(what);
      row(a->shortcut().toString(QKeySequence::NativeText), what);
    }
  }
  row(tr("Ctrl+Tab, Ctrl+Shift+Tab"), tr("the next, the previous tab"));
  const QString timeline = tr("<p><b>In the Timeline's chart</b></p><table cellspacing=4>");
  lane(tr("wheel"), tr("zoom at the mouse (the time under it stays put)"));
  lane(tr("W, S"), tr("zoom in, zoom out"));
  lane(tr("A, D"), tr("pan left, right"));
  lane(tr("right- or Shift-drag"), tr("zoom to the range dragged"));
  lane(tr("left-drag"), tr("pan"));
  lane(tr("click the memory lane"), tr("what is live at that moment, beside the chart"));
  return tr("<table cellspacing=4>") + rows + QStringLiteral("</table>") + timeline + lanes + QStringLiteral("</table>");
}

void MainWindow::showAbout() {
  const Environment env = captureEnvironment();
  auto or_none = [](const std::string& s) { return s.empty() ? QObject::tr("not available") : QString::fromStdString(s); };
  QString gpus;
  for (const auto& g : env.gpus) gpus += QString::fromStdString(g.name) + " (sm_" + QString::number(g.cc_major) + QString::number(g.cc_minor) + ")<br>";
  QMessageBox::about(this, tr("About AttnScope"),
                     tr("<h3>AttnScope %1</h3><p>Attention memory profiler: sweeps attention workloads across "
                        "backends and charts peak memory against heads and sequence length.</p>"
                        "<table><tr><td>Git revision</td><td>%2</td></tr><tr><td>Qt</td><td>%3</td></tr>"
                        "<tr><td>CUDA runtime</td><td>%4</td></tr><tr><td>CUDA driver</td><td>%5</td></tr>"
                        "<tr><td>CUPTI</td><td>%6</td></tr><tr><td>GPUs</td><td>%7</td></tr></table><p>%8</p>")
                         .arg(QString::fromStdString(appVersion()), or_none(gitRevision()), QString::fromLatin1(qVersion()),
                              or_none(env.runtime_version), or_none(env.driver_version), or_none(env.cupti_version),
                              gpus.isEmpty() ? tr("none") : gpus, QString::fromStdString(env.gpu_note).toHtmlEscaped()));
}

void MainWindow::compare(const QList<qint64>& ids) {
  if (ids.size() < 2) return report(tr("Select two or more sweeps in the Runs dock to compare them."));
  std::vector<int64_t> v(ids.begin(), ids.end());
  showSweeps(v);
  for (int i = 0; i < tabs_->count(); ++i)  // by type: tab titles are translated
    if (qobject_cast<CompareView*>(tabs_->widget(i))) tabs_->setCurrentIndex(i);
}

}  // namespace attnscope::ui
