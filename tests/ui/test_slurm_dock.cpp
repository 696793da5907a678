// The Runs dock follows a sweep submitted to a real Slurm (scripts/slurm-local.sh; CI starts it)
// by itself: the CLI submits a 3-task array without --wait, the window opened on the database lists
// it as submitted, polls squeue and sacct on a pool thread, merges each shard as its task ends,
// and the sweep turns finished with all 12 points, its charts (shown while still empty) filled. Skips with a
// message when no Slurm answers (fails instead under ATTNSCOPE_REQUIRE_SLURM).

#include <QProcess>
#include <QRegularExpression>

#include "core/store/store.h"
#include "ui/main_window.h"
#include "ui/sweep_tree_model.h"
#include "ui_test_support.h"

using namespace attnscope;
using namespace attnscope::ui;

class TestSlurmDock : public QObject {
  Q_OBJECT
  QTemporaryDir dir_;

  static bool slurmUp(QString* said) {
    QProcess p;
    p.start("sinfo", {"-h", "-o", "%T"});
    if (!p.waitForFinished(30000) || p.exitCode() != 0) {
      *said = p.errorString() + " " + QString::fromLocal8Bit(p.readAllStandardError());
      return false;
    }
    *said = QString::fromLocal8Bit(p.readAllStandardOutput()).trimmed();
    return said->contains("idle") || said->contains("mix") || said->contains("alloc");
  }

 private slots:
  void initTestCase() {
    QString said;
    if (!slurmUp(&said)) {
      if (qEnvironmentVariableIsSet("ATTNSCOPE_REQUIRE_SLURM"))
        QFAIL(qPrintable("ATTNSCOPE_REQUIRE_SLURM is set but no Slurm answers (sinfo: " + said + ")"));
      QSKIP(qPrintable("no Slurm answers here (sinfo: " + said +
                       "); start one with: eval \"$(bash scripts/slurm-local.sh start)\""));
    }
  }

  void submittedSweepIsFollowedAndMergedInTheBackground() {
    const QString db = dir_.filePath("cluster.sqlite");
    QProcess cli;
    cli.start(ATTNSCOPE_BIN, {"sweep", "--backends", "cpu.reference,cpu.flash", "--heads", "2,4,8", "--seq", "64,128",
                              "--head-dim", "16", "--reps", "3", "--warmup", "0", "--slurm", "--tasks", "3", "--parallel",
                              "1", "--out", dir_.filePath("shared"), "--name", "followed by the dock", "--db", db});
    QVERIFY(cli.waitForFinished(120000));
    const QString out = QString::fromLocal8Bit(cli.readAllStandardOutput());
    QVERIFY2(cli.exitCode() == 0, qPrintable(out + QString::fromLocal8Bit(cli.readAllStandardError())));
    const auto m = QRegularExpression("S(\\d+) job (\\d+)").match(out);
    QVERIFY2(m.hasMatch(), qPrintable(out));
    const qint64 sweep = m.captured(1).toLongLong();

    MainWindow w(db);
    w.setInteractive(false);
    w.show();
    auto* model = w.findChild<SweepTreeModel*>();
    QVERIFY(model);
    QTRY_VERIFY_WITH_TIMEOUT(model->sweepIndex(sweep).isValid(), 30000);
    const auto state = [&] { return model->sweepIndex(sweep, SweepTreeModel::StateColumn).data(Qt::EditRole).toString(); };
    const QString shown = model->sweepIndex(sweep, SweepTreeModel::StateColumn).data().toString();
    QVERIFY2(shown.startsWith("submitted (") && shown.contains("PENDING"), qPrintable(shown));
    // Shown while still empty: the charts fill as the shards are merged.
    w.showSweeps({sweep});
    QTRY_VERIFY_WITH_TIMEOUT(state() == "finished", 150000);
    QTRY_COMPARE_WITH_TIMEOUT(w.shownSweeps().front()->runs.size(), size_t{12}, 30000);
    QTRY_VERIFY_WITH_TIMEOUT(!w.isPollingSlurm(), 30000);
    QVERIFY2(!w.pollSlurm(), "nothing is submitted any more: nothing to poll");
    QVERIFY2(w.lastMessage().isEmpty(), qPrintable(w.lastMessage()));
    w.close();

    Store check(db.toStdString(), StoreMode::read);
    QVERIFY(check.check().empty());
    QCOMPARE(check.pointIndexes(sweep).size(), size_t{12});
    QCOMPARE(check.runs(sweep).size(), size_t{12});
    for (const auto& t : check.slurmTasks(sweep)) {
      QCOMPARE(QString::fromStdString(t.state), QString("COMPLETED"));
      QVERIFY(t.merged);
    }
  }
};

ATTNSCOPE_UI_TEST_MAIN(TestSlurmDock)
#include "test_slurm_dock.moc"
