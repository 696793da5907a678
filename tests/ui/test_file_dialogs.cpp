// Every window action that shows a file dialog, with the database in the folder the dialog shows.
// A file dialog (its file system model sniffing a file's type, an icon provider, a platform
// plugin) may open and close the database's -wal and -shm; with POSIX locks each close dropped
// every lock the GUI held, so `attnscope runs` in a terminal then checkpointed and deleted the
// window's live -wal and -shm and the window's next sweep failed ("file is not a database") or
// destroyed the file. After each action here: the window still holds its locks as another
// process sees them, the real CLI reading the database leaves the window's -wal and -shm in place,
// the window writes again, and at the end a sweep from the window saves every point.

#include <fcntl.h>
#include <sys/inotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <functional>
#include <set>

#include <QAbstractButton>
#include <QAction>
#include <QDialog>
#include <QFileDialog>
#include <QMenuBar>
#include <QProcess>
#include <QPushButton>
#include <QSignalSpy>
#include <QTimer>

#include "core/store/store.h"
#include "ui/backend_list_model.h"
#include "ui/main_window.h"
#include "ui/sweep_panel.h"
#include "ui/workload_form.h"
#include "ui_test_support.h"

using namespace attnscope;
using namespace attnscope::ui;

namespace {

ino_t inodeOf(const QString& path) {
  struct stat st {};
  return ::stat(path.toLocal8Bit().constData(), &st) == 0 ? st.st_ino : 0;
}

// Whether a lock is held on the file by anyone but a POSIX lock of this process: the window's
// locks are open file description locks, which a POSIX test from any process (this one too)
// sees as conflicting, exactly as another process's SQLite does.
bool lockedFromOutside(const QString& path) {
  int fd = ::open(path.toLocal8Bit().constData(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return false;
  struct flock probe {};
  probe.l_type = F_WRLCK;
  probe.l_whence = SEEK_SET;
  const bool locked = ::fcntl(fd, F_GETLK, &probe) == 0 && probe.l_type != F_UNLCK;
  ::close(fd);
  return locked;
}

// The names of the database's files opened in `folder` while watching (for the record: which
// of them a dialog really touched on this platform).
class OpenWatch {
 public:
  explicit OpenWatch(const QString& folder) {
    fd_ = inotify_init1(IN_NONBLOCK | IN_CLOEXEC);
    if (fd_ >= 0) inotify_add_watch(fd_, folder.toLocal8Bit().constData(), IN_OPEN);
  }
  ~OpenWatch() {
    if (fd_ >= 0) ::close(fd_);
  }
  std::set<QString> opened() {
    std::set<QString> names;
    alignas(inotify_event) char buf[4096];
    ssize_t n;
    while (fd_ >= 0 && (n = ::read(fd_, buf, sizeof buf)) > 0)
      for (char* p = buf; p < buf + n;) {
        auto* e = reinterpret_cast<inotify_event*>(p);
        if (e->len > 0) names.insert(QString::fromLocal8Bit(e->name));
        p += sizeof(inotify_event) + e->len;
      }
    return names;
  }

 private:
  int fd_ = -1;
};

// Waits for the application's modal QFileDialog, shows it `folder`, lets its model load (and
// sniff), then `finish`es it (accept with a file, or reject).
void handleFileDialog(const QString& folder, const std::function<void(QFileDialog*)>& finish) {
  QTimer::singleShot(0, [=] {
    QFileDialog* dialog = nullptr;
    for (int i = 0; i < 200 && !dialog; ++i) {
      dialog = qobject_cast<QFileDialog*>(QApplication::activeModalWidget());
      if (!dialog) QTest::qWait(20);
    }
    if (!dialog) {
      qWarning("no file dialog appeared");
      return;
    }
    dialog->setDirectory(folder);
    QTest::qWait(1500);  // the file system model gathers the folder's files on its own thread
    finish(dialog);
  });
}

QAction* fileAction(MainWindow& w, const QString& text) {
  for (QAction* menu : w.menuBar()->actions())
    if (menu->menu())
      for (QAction* a : menu->menu()->actions())
        if (a->text() == text) return a;
  return nullptr;
}

}  // namespace

class TestFileDialogs : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

 private slots:
  void initTestCase() { QVERIFY(dir_.isValid()); }

  void everyFileDialogLeavesTheDatabaseLocked() {
    const QString db = dir_.filePath("runs.sqlite");
    int64_t sweep = 0;
    {
      Store store(db.toStdString());
      sweep = test::runSweepInto(store, test::tinySweep());
    }
    MainWindow w(db);
    w.setInteractive(false);
    w.resize(1400, 900);
    w.show();
    w.showSweeps({sweep});
    QVERIFY(w.store());
    w.store()->renameSweep(sweep, "opened");  // the window's connection has its -wal and -shm
    const ino_t wal = inodeOf(db + "-wal"), shm = inodeOf(db + "-shm");
    QVERIFY(wal != 0 && shm != 0);

    auto accept_as = [&](const QString& name) {
      return [this, name](QFileDialog* d) {
        d->selectFile(dir_.filePath(name));
        QMetaObject::invokeMethod(d, "accept");  // as the Save button does
      };
    };
    auto reject = [](QFileDialog* d) { d->reject(); };
    struct Step {
      QString action;
      std::function<void(QFileDialog*)> finish;
    };
    const std::vector<Step> steps = {
        {QStringLiteral("&Open database..."), reject},
        {QStringLiteral("&New database..."), reject},
        {QStringLiteral("Export data as &CSV..."), accept_as("data.csv")},
        {QStringLiteral("Export data as &JSON..."), accept_as("data.json")},
        {QStringLiteral("Export PDF &report..."), accept_as("report.pdf")},
        {QStringLiteral("&Export chart..."), reject},  // the export dialog's Browse... button
    };
    OpenWatch watch(dir_.path());
    int round = 0;
    for (const Step& step : steps) {
      QAction* action = fileAction(w, step.action);
      QVERIFY2(action, qPrintable(step.action));
      if (step.action == QStringLiteral("&Export chart...")) {
        // The chart export dialog first; its Browse... opens the file dialog.
        QTimer::singleShot(0, [&] {
          QDialog* dialog = nullptr;
          for (int i = 0; i < 200 && !dialog; ++i) {
            dialog = qobject_cast<QDialog*>(QApplication::activeModalWidget());
            if (!dialog) QTest::qWait(20);
          }
          QVERIFY(dialog);
          for (QPushButton* b : dialog->findChildren<QPushButton*>())
            if (b->text() == QStringLiteral("Browse...")) {
              handleFileDialog(dir_.path(), step.finish);
              b->click();
            }
          dialog->reject();
        });
      } else {
        handleFileDialog(dir_.path(), step.finish);
      }
      watch.opened();  // what the last round's checks opened
      action->trigger();
      QTest::qWait(50);
      const std::set<QString> opened = watch.opened();
      QStringList touched;
      for (const QString& name : opened)
        if (name.startsWith("runs.sqlite")) touched << name;
      qInfo("%s: opened in the folder: %s", qPrintable(step.action), qPrintable(touched.join(", ")));

      QVERIFY2(lockedFromOutside(db), qPrintable(step.action + ": the database lost its lock"));
      QVERIFY2(lockedFromOutside(db + "-shm"), qPrintable(step.action + ": the -shm lost its lock"));
      // The real CLI, as a user in a terminal: the last reader would checkpoint and delete.
      QProcess cli;
      cli.start(ATTNSCOPE_BIN, {"runs", "--db", db});
      QVERIFY(cli.waitForFinished(60000));
      QVERIFY2(cli.exitCode() == 0, cli.readAllStandardError().constData());
      QCOMPARE(inodeOf(db + "-wal"), wal);
      QCOMPARE(inodeOf(db + "-shm"), shm);
      w.store()->renameSweep(sweep, QStringLiteral("after step %1").arg(++round).toStdString());
      QVERIFY2(w.lastMessage().isEmpty() || !w.lastMessage().contains("database"), qPrintable(w.lastMessage()));
    }
    QCOMPARE(w.databasePath(), db);

    // A sweep from the window after all that saves every point.
    WorkloadForm* form = w.workloadForm();
    QVERIFY(form->setFieldText("batch", "1"));
    QVERIFY(form->setFieldText("head_dim", "8"));
    QVERIFY(form->setFieldText("mask", "none"));
    w.backendModel()->setCheckedIds({"cpu.reference", "cpu.flash"});
    w.sweepPanel()->setAxisText("heads", "1, 2");
    w.sweepPanel()->setAxisText("seq", "16");
    w.sweepPanel()->setAxisText("other", "");
    QSignalSpy finished(&w, &MainWindow::sweepFinished);
    QVERIFY(w.startSweep());
    QVERIFY(finished.wait(120000));
    QCOMPARE(finished.front().at(1).toString(), QString("finished"));
    const int64_t second = finished.front().at(0).toLongLong();
    w.close();
    QTest::qWait(50);

    Store check(db.toStdString(), StoreMode::read);
    QVERIFY(check.check().empty());
    QCOMPARE(check.sweeps().size(), size_t{2});
    QCOMPARE(QString::fromStdString(check.sweep(sweep)->name), QStringLiteral("after step %1").arg(round));
    QCOMPARE(static_cast<int>(check.runs(second).size()), 4);
  }
};

ATTNSCOPE_UI_TEST_MAIN(TestFileDialogs)
#include "test_file_dialogs.moc"
