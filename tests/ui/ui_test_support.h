#pragma once
// Shared by the GUI tests: a headless main and a small real CPU sweep in a temporary database.

#include <cstdint>
#include <string>

#include <QApplication>
#include <QDir>
#include <QTemporaryDir>
#include <QtTest>

namespace attnscope {
class Store;
struct SweepSpec;
}

namespace attnscope::ui::test {

// Offscreen unless QT_QPA_PLATFORM is set; settings in a fresh folder (never the user's).
void prepareEnvironment();

// cpu.reference + cpu.flash over heads {1, 2} x seq {16, 32}, head_dim 8: 8 points, all ok.
SweepSpec tinySweep();
// Runs the sweep with the real CPU backends and saves every point. Returns the sweep id.
int64_t runSweepInto(Store& store, const SweepSpec& spec);

}  // namespace attnscope::ui::test

#define ATTNSCOPE_UI_TEST_MAIN(TestClass)                    \
  int main(int argc, char** argv) {                          \
    attnscope::ui::test::prepareEnvironment();               \
    QApplication app(argc, argv);                            \
    app.setAttribute(Qt::AA_Use96Dpi, true);                 \
    TestClass tc;                                            \
    QTEST_SET_MAIN_SOURCE_PATH                               \
    return QTest::qExec(&tc, argc, argv);                    \
  }
