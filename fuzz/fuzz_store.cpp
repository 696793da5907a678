// Fuzzes opening a database file: the input is the whole file (seeds are real AttnScope stores),
// opened with the real Store and read as `runs`, `show` and the GUI read it. A damaged or foreign
// file must be refused with a StoreError or read as far as it is sound; never a crash, a leak
// or undefined behaviour. The side files SQLite may leave are removed between inputs.

#include <cstdint>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

#include "core/trace/phase_summary.h"
#include "core/store/store.h"
#include "fuzz/fuzz_support.h"

using namespace attnscope;

namespace {

void removeDatabase(const std::string& path) {
  std::error_code ec;
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) std::filesystem::remove(path + suffix, ec);
}

void readEverything(Store& store) {
  int budget = 64;  // a mutated count must not make one input slow
  for (const SweepInfo& sweep : store.sweeps()) {
    if (--budget < 0) return;
    (void)store.sweep(sweep.id);
    for (const RunResult& run : store.runs(sweep.id)) {
      if (--budget < 0) return;
      // What `show R` and the Breakdown view compute from a run: its plan's peak and buffer
      // lifetimes, and the phase table from its events.
      if (auto full = store.run(run.id, true)) {
        (void)full->plan.peakBytes();
        for (const PlannedBuffer& b : full->plan.buffers) (void)full->plan.lifetime(b);
        (void)full->plan.stepName(full->plan.peakStep());
        (void)summarizePhases(full->trace.events);
      }
      (void)store.sweepOfRun(run.id);
    }
    if (sweep.environment_id > 0) (void)store.environment(sweep.environment_id);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = fuzz::scratch().file("fuzz.sqlite");
  removeDatabase(path);
  fuzz::writeFile(path, data, size);
  // As `runs`, `show` and `export` open it (read: never writes), then as `run --db` and the GUI
  // do (existing: migrates, marks dead sweeps interrupted), on the same bytes.
  for (StoreMode mode : {StoreMode::read, StoreMode::existing}) {
    try {
      Store store(path, mode);
      readEverything(store);
    } catch (const StoreError&) {
    } catch (const std::runtime_error&) {
      // Rows the store cannot decode (bad JSON, unknown names) are reported, not fatal.
    }
    removeDatabase(path);
    fuzz::writeFile(path, data, size);
  }
  removeDatabase(path);
  return 0;
}
