// The CUPTI adapter on synthetic records: real CUpti_* record structs packed into a buffer the way
// CUPTI lays them out (each record's full struct size, 8-byte aligned, back to back), walked with
// the real cuptiActivityGetNextRecord, which needs no GPU or driver. Every mapped field is checked.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include "core/cupti/cupti_adapter.h"

using namespace attnscope;

namespace {

// Records back to back in 8-byte-aligned storage, as CUPTI fills a buffer: every record type is
// padded to a multiple of ACTIVITY_RECORD_ALIGNMENT (8), so the next one starts aligned.
class RecordBuffer {
 public:
  template <typename T>
  void add(const T& record) {
    static_assert(sizeof(T) % 8 == 0 && alignof(T) == 8, "CUPTI records are padded to 8 bytes");
    offsets_.push_back(bytes_);
    words_.resize((bytes_ + sizeof(T)) / 8);
    std::memcpy(reinterpret_cast<uint8_t*>(words_.data()) + bytes_, &record, sizeof(T));
    bytes_ += sizeof(T);
  }
  uint8_t* data() { return reinterpret_cast<uint8_t*>(words_.data()); }
  size_t size() const { return bytes_; }
  const std::vector<size_t>& offsets() const { return offsets_; }

 private:
  std::vector<uint64_t> words_;
  size_t bytes_ = 0;
  std::vector<size_t> offsets_;
};

template <typename T>
T zeroed() {
  T r;
  std::memset(&r, 0, sizeof(T));
  return r;
}

constexpr int64_t kOffset = -1'000'000;  // CUPTI clock to host clock

const char kMangled[] = "_Z9flash_fwdILi64EEvPKfS1_S1_Pfi";
const char kLibrary[] = "/usr/local/cuda/lib64/libcublasLt.so.13";

CUpti_ActivityKernel10 kernelRecord() {
  auto k = zeroed<CUpti_ActivityKernel10>();
  k.kind = CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL;
  k.start = 5'000'000;
  k.end = 5'250'000;
  k.deviceId = 1;
  k.contextId = 1;
  k.streamId = 13;
  k.gridX = 128;
  k.gridY = 16;
  k.gridZ = 2;
  k.blockX = 128;
  k.blockY = 4;
  k.blockZ = 1;
  k.registersPerThread = 168;
  k.staticSharedMemory = 2048;
  k.dynamicSharedMemory = 98304;
  k.correlationId = 4242;
  k.name = kMangled;
  return k;
}

}  // namespace

TEST(CuptiAdapter, RealNextRecordWalksPackedRecordsAtTheirOffsets) {
  RecordBuffer buf;
  buf.add(kernelRecord());
  auto m = zeroed<CUpti_ActivityMemcpy6>();
  m.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  buf.add(m);
  auto mem = zeroed<CUpti_ActivityMemory4>();
  mem.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  buf.add(mem);
  auto marker = zeroed<CUpti_ActivityMarker2>();
  marker.kind = CUPTI_ACTIVITY_KIND_MARKER;
  buf.add(marker);

  CUpti_Activity* record = nullptr;
  std::vector<size_t> seen;
  for (;;) {
    CUptiResult r = cuptiActivityGetNextRecord(buf.data(), buf.size(), &record);
    if (r == CUPTI_ERROR_MAX_LIMIT_REACHED) break;
    ASSERT_EQ(r, CUPTI_SUCCESS);
    seen.push_back(static_cast<size_t>(reinterpret_cast<uint8_t*>(record) - buf.data()));
  }
  EXPECT_EQ(seen, buf.offsets());
}

TEST(CuptiAdapter, KernelRecord) {
  RecordBuffer buf;
  buf.add(kernelRecord());
  CuptiActivityAdapter adapter(kOffset);
  std::vector<TraceEvent> out;
  auto walk = adapter.appendBuffer(buf.data(), buf.size(), out);
  EXPECT_EQ(walk.records, 1u);
  EXPECT_EQ(walk.unmapped, 0u);
  EXPECT_EQ(walk.status, CUPTI_SUCCESS);
  ASSERT_EQ(out.size(), 1u);
  const TraceEvent& e = out[0];
  EXPECT_EQ(e.kind, EventKind::kernel);
  EXPECT_EQ(e.source, EventSource::cupti);
  EXPECT_EQ(e.memory, MemoryKind::device);
  EXPECT_EQ(e.start_ns, 5'000'000 + kOffset);
  EXPECT_EQ(e.end_ns, 5'250'000 + kOffset);
  EXPECT_EQ(e.name, "void flash_fwd<64>(float const*, float const*, float const*, float*, int)");
  EXPECT_EQ(e.stream, 13u);
  EXPECT_EQ(e.device, 1u);
  EXPECT_EQ(e.correlation, 4242u);
  EXPECT_EQ(e.kernel.grid[0], 128);
  EXPECT_EQ(e.kernel.grid[1], 16);
  EXPECT_EQ(e.kernel.grid[2], 2);
  EXPECT_EQ(e.kernel.block[0], 128);
  EXPECT_EQ(e.kernel.block[1], 4);
  EXPECT_EQ(e.kernel.block[2], 1);
  EXPECT_EQ(e.kernel.registers, 168);
  EXPECT_EQ(e.kernel.static_smem, 2048);
  EXPECT_EQ(e.kernel.dynamic_smem, 98304);
}

TEST(CuptiAdapter, KernelNamesAreCopiedAndUnmangledNamesKept) {
  char name[] = "plain_c_kernel";
  auto k = kernelRecord();
  k.name = name;
  RecordBuffer buf;
  buf.add(k);
  CuptiActivityAdapter adapter;
  std::vector<TraceEvent> out;
  adapter.appendBuffer(buf.data(), buf.size(), out);
  std::memset(name, 'x', sizeof(name) - 1);  // CUPTI may reuse its memory after the callback
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].name, "plain_c_kernel");
  EXPECT_EQ(out[0].start_ns, 5'000'000);
}

// CUPTI frees a kernel's name with its module and may hand the address to another kernel's name:
// a name seen at a known pointer must not be reused for different text there.
TEST(CuptiAdapter, KernelNameAtAReusedAddressIsReadAgain) {
  char name[32] = "first_kernel";
  auto k = kernelRecord();
  k.name = name;
  CuptiActivityAdapter adapter;
  std::vector<TraceEvent> out;
  RecordBuffer one;
  one.add(k);
  adapter.appendBuffer(one.data(), one.size(), out);
  std::strcpy(name, "_Z6secondv");  // same address, another kernel
  RecordBuffer two;
  two.add(k);
  adapter.appendBuffer(two.data(), two.size(), out);
  k.name = nullptr;
  RecordBuffer three;
  three.add(k);
  adapter.appendBuffer(three.data(), three.size(), out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].name, "first_kernel");
  EXPECT_EQ(out[1].name, "second()");
  EXPECT_EQ(out[2].name, "kernel");
}

TEST(CuptiAdapter, MemcpyAndMemsetRecords) {
  auto c = zeroed<CUpti_ActivityMemcpy6>();
  c.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  c.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  c.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  c.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  c.bytes = 3 << 20;
  c.start = 7'000'000;
  c.end = 7'400'000;
  c.deviceId = 0;
  c.streamId = 7;
  c.correlationId = 99;
  c.copyCount = 1;
  auto s = zeroed<CUpti_ActivityMemset4>();
  s.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  s.value = 0;
  s.bytes = 65536;
  s.start = 8'000'000;
  s.end = 8'001'000;
  s.deviceId = 2;
  s.streamId = 21;
  s.correlationId = 100;
  s.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  RecordBuffer buf;
  buf.add(c);
  buf.add(s);
  CuptiActivityAdapter adapter(kOffset);
  std::vector<TraceEvent> out;
  EXPECT_EQ(adapter.appendBuffer(buf.data(), buf.size(), out).records, 2u);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, EventKind::memcpy);
  EXPECT_EQ(out[0].name, "DtoH");
  EXPECT_EQ(out[0].memory, MemoryKind::pinned);
  EXPECT_EQ(out[0].bytes, 3 << 20);
  EXPECT_EQ(out[0].start_ns, 7'000'000 + kOffset);
  EXPECT_EQ(out[0].end_ns, 7'400'000 + kOffset);
  EXPECT_EQ(out[0].stream, 7u);
  EXPECT_EQ(out[0].device, 0u);
  EXPECT_EQ(out[0].correlation, 99u);
  EXPECT_EQ(out[1].kind, EventKind::memset);
  EXPECT_EQ(out[1].name, "memset");
  EXPECT_EQ(out[1].memory, MemoryKind::device);
  EXPECT_EQ(out[1].bytes, 65536);
  EXPECT_EQ(out[1].start_ns, 8'000'000 + kOffset);
  EXPECT_EQ(out[1].end_ns, 8'001'000 + kOffset);
  EXPECT_EQ(out[1].stream, 21u);
  EXPECT_EQ(out[1].device, 2u);
  EXPECT_EQ(out[1].correlation, 100u);
}

TEST(CuptiAdapter, MemoryRecordsBecomeAllocAndFree) {
  auto a = zeroed<CUpti_ActivityMemory4>();
  a.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  a.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  a.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  a.correlationId = 11;
  a.address = 0x7f0000000000;
  a.bytes = 1 << 26;
  a.timestamp = 9'000'000;
  a.deviceId = 0;
  a.streamId = CUPTI_INVALID_STREAM_ID;
  a.source = kLibrary;
  auto f = a;
  f.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_RELEASE;
  f.timestamp = 9'500'000;
  f.correlationId = 12;
  f.source = nullptr;
  static const char kVariable[] = "d_table";
  auto st = a;
  st.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_MANAGED;
  st.name = kVariable;
  st.address = 0x1000;
  RecordBuffer buf;
  buf.add(a);
  buf.add(f);
  buf.add(st);
  CuptiActivityAdapter adapter(kOffset);
  std::vector<TraceEvent> out;
  adapter.appendBuffer(buf.data(), buf.size(), out);
  ASSERT_EQ(out.size(), 3u);
  EXPECT_EQ(out[0].kind, EventKind::alloc);
  EXPECT_EQ(out[0].source, EventSource::cupti);
  EXPECT_EQ(out[0].memory, MemoryKind::device);
  EXPECT_EQ(out[0].address, 0x7f0000000000u);
  EXPECT_EQ(out[0].bytes, 1 << 26);
  EXPECT_EQ(out[0].start_ns, 9'000'000 + kOffset);
  EXPECT_EQ(out[0].end_ns, out[0].start_ns);
  EXPECT_EQ(out[0].stream, 0u);  // not stream-ordered
  EXPECT_EQ(out[0].correlation, 11u);
  EXPECT_EQ(out[0].name, "libcublasLt.so.13");
  EXPECT_EQ(out[1].kind, EventKind::free);
  EXPECT_EQ(out[1].address, 0x7f0000000000u);
  EXPECT_EQ(out[1].start_ns, 9'500'000 + kOffset);
  EXPECT_EQ(out[1].correlation, 12u);
  EXPECT_EQ(out[1].name, "");
  EXPECT_EQ(out[2].memory, MemoryKind::managed);
  EXPECT_EQ(out[2].name, "d_table");
}

TEST(CuptiAdapter, PoolRecordsBecomeReservationDeltas) {
  const uint64_t pool = 0x7e0000000000;
  auto created = zeroed<CUpti_ActivityMemoryPool3>();
  created.kind = CUPTI_ACTIVITY_KIND_MEMORY_POOL;
  created.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_CREATED;
  created.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  created.deviceId = 0;
  created.address = pool;
  created.size = 32 << 20;
  created.timestamp = 1'000'000;
  // A stream-ordered allocation the pool grew to serve: the pool now holds 96 MiB.
  auto async = zeroed<CUpti_ActivityMemory4>();
  async.kind = CUPTI_ACTIVITY_KIND_MEMORY2;
  async.memoryOperationType = CUPTI_ACTIVITY_MEMORY_OPERATION_TYPE_ALLOCATION;
  async.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  async.address = pool + 4096;
  async.bytes = 64 << 20;
  async.timestamp = 2'000'000;
  async.streamId = 7;
  async.isAsync = 1;
  async.memoryPoolConfig.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_LOCAL;
  async.memoryPoolConfig.address = pool;
  async.memoryPoolConfig.pool.size = 96 << 20;
  auto trimmed = created;
  trimmed.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_TRIMMED;
  trimmed.size = 16 << 20;
  trimmed.timestamp = 3'000'000;
  auto destroyed = created;
  destroyed.memoryPoolOperationType = CUPTI_ACTIVITY_MEMORY_POOL_OPERATION_TYPE_DESTROYED;
  destroyed.timestamp = 4'000'000;
  destroyed.isManagedPool = 0;
  auto imported = created;
  imported.memoryPoolType = CUPTI_ACTIVITY_MEMORY_POOL_TYPE_IMPORTED;
  RecordBuffer buf;
  buf.add(created);
  buf.add(async);
  buf.add(trimmed);
  buf.add(destroyed);
  buf.add(imported);
  CuptiActivityAdapter adapter;
  std::vector<TraceEvent> out;
  auto walk = adapter.appendBuffer(buf.data(), buf.size(), out);
  EXPECT_EQ(walk.records, 5u);
  EXPECT_EQ(walk.unmapped, 0u);
  ASSERT_EQ(out.size(), 5u);
  EXPECT_EQ(out[0].kind, EventKind::pool_reserve);
  EXPECT_EQ(out[0].bytes, 32 << 20);
  EXPECT_EQ(out[0].address, pool);
  EXPECT_EQ(out[0].start_ns, 1'000'000);
  EXPECT_EQ(out[0].name, "pool created");
  EXPECT_EQ(out[1].kind, EventKind::pool_reserve);
  EXPECT_EQ(out[1].bytes, 64 << 20);
  EXPECT_EQ(out[1].start_ns, 2'000'000);
  EXPECT_EQ(out[2].kind, EventKind::alloc);
  EXPECT_EQ(out[2].bytes, 64 << 20);
  EXPECT_EQ(out[2].stream, 7u);
  EXPECT_EQ(out[3].kind, EventKind::pool_release);
  EXPECT_EQ(out[3].bytes, 80 << 20);
  EXPECT_EQ(out[3].name, "pool trimmed");
  EXPECT_EQ(out[4].kind, EventKind::pool_release);
  EXPECT_EQ(out[4].bytes, 16 << 20);
  EXPECT_EQ(out[4].name, "pool destroyed");
  EXPECT_EQ(out[4].memory, MemoryKind::device);
}

TEST(CuptiAdapter, MarkersPairIntoPhaseRanges) {
  static const char kName[] = "softmax";
  static const char kInstant[] = "checkpoint";
  auto start = zeroed<CUpti_ActivityMarker2>();
  start.kind = CUPTI_ACTIVITY_KIND_MARKER;
  start.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  start.timestamp = 10'000'000;
  start.id = 5;
  start.name = kName;
  auto end = zeroed<CUpti_ActivityMarker2>();
  end.kind = CUPTI_ACTIVITY_KIND_MARKER;
  end.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  end.timestamp = 12'000'000;
  end.id = 5;
  auto orphan_end = end;
  orphan_end.id = 77;  // its start came before capture
  auto instant = zeroed<CUpti_ActivityMarker2>();
  instant.kind = CUPTI_ACTIVITY_KIND_MARKER;
  instant.flags = CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS;
  instant.timestamp = 11'000'000;
  instant.id = 6;
  instant.name = kInstant;
  RecordBuffer buf;
  buf.add(start);
  buf.add(instant);
  buf.add(end);
  buf.add(orphan_end);
  CuptiActivityAdapter adapter(kOffset);
  std::vector<TraceEvent> out;
  adapter.appendBuffer(buf.data(), buf.size(), out);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[0].kind, EventKind::phase);
  EXPECT_EQ(out[0].name, "checkpoint");
  EXPECT_EQ(out[0].start_ns, 11'000'000 + kOffset);
  EXPECT_EQ(out[0].end_ns, out[0].start_ns);
  EXPECT_EQ(out[1].kind, EventKind::phase);
  EXPECT_EQ(out[1].source, EventSource::cupti);
  EXPECT_EQ(out[1].name, "softmax");
  EXPECT_EQ(out[1].start_ns, 10'000'000 + kOffset);
  EXPECT_EQ(out[1].end_ns, 12'000'000 + kOffset);
  EXPECT_EQ(out[1].correlation, 5u);
  EXPECT_EQ(adapter.openMarkers(), 0u);
}

TEST(CuptiAdapter, UntimedAndUnmappedRecordsAreCountedNotMapped) {
  auto untimed = kernelRecord();
  untimed.start = untimed.end = 0;
  auto name = zeroed<CUpti_ActivityName>();
  name.kind = CUPTI_ACTIVITY_KIND_NAME;
  RecordBuffer buf;
  buf.add(untimed);
  buf.add(name);
  buf.add(kernelRecord());
  CuptiActivityAdapter adapter;
  std::vector<TraceEvent> out;
  auto walk = adapter.appendBuffer(buf.data(), buf.size(), out);
  EXPECT_EQ(walk.records, 3u);
  EXPECT_EQ(walk.unmapped, 1u);
  EXPECT_EQ(adapter.untimed(), 1);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_EQ(out[0].correlation, 4242u);
}

// Marker2's timestamp is 0 when CUPTI could not time it: no phase at a made-up time; an end whose
// start was untimed is an orphan.
TEST(CuptiAdapter, UntimedMarkersAreCountedNotMapped) {
  static const char kName[] = "scores";
  auto start = zeroed<CUpti_ActivityMarker2>();
  start.kind = CUPTI_ACTIVITY_KIND_MARKER;
  start.flags = CUPTI_ACTIVITY_FLAG_MARKER_START;
  start.timestamp = 0;
  start.id = 9;
  start.name = kName;
  auto end = start;
  end.flags = CUPTI_ACTIVITY_FLAG_MARKER_END;
  end.timestamp = 20'000'000;
  end.name = nullptr;
  auto instant = start;
  instant.flags = CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS;
  instant.id = 10;
  RecordBuffer buf;
  buf.add(start);
  buf.add(instant);
  buf.add(end);
  CuptiActivityAdapter adapter(kOffset);
  std::vector<TraceEvent> out;
  auto walk = adapter.appendBuffer(buf.data(), buf.size(), out);
  EXPECT_EQ(walk.records, 3u);
  EXPECT_TRUE(out.empty());
  EXPECT_EQ(adapter.untimed(), 2);
  EXPECT_EQ(adapter.openMarkers(), 0u);
}

// A forced flush hands back a kernel (copy, set) still running with end == 0: no event with a
// negative duration; it is counted as untimed.
TEST(CuptiAdapter, UnfinishedRecordsFromAForcedFlushAreCountedNotMapped) {
  auto running = kernelRecord();
  running.end = 0;
  auto copy = zeroed<CUpti_ActivityMemcpy6>();
  copy.kind = CUPTI_ACTIVITY_KIND_MEMCPY;
  copy.start = 7'000'000;
  copy.bytes = 4096;
  auto set = zeroed<CUpti_ActivityMemset4>();
  set.kind = CUPTI_ACTIVITY_KIND_MEMSET;
  set.start = 8'000'000;
  set.bytes = 4096;
  RecordBuffer buf;
  buf.add(running);
  buf.add(copy);
  buf.add(set);
  buf.add(kernelRecord());
  CuptiActivityAdapter adapter(kOffset);
  std::vector<TraceEvent> out;
  auto walk = adapter.appendBuffer(buf.data(), buf.size(), out);
  EXPECT_EQ(walk.records, 4u);
  EXPECT_EQ(adapter.untimed(), 3);
  ASSERT_EQ(out.size(), 1u);
  EXPECT_GT(out[0].end_ns, out[0].start_ns);
}

TEST(CuptiAdapter, TruncatedBufferStopsWithAnError) {
  RecordBuffer buf;
  buf.add(kernelRecord());
  buf.add(kernelRecord());
  CuptiActivityAdapter adapter;
  std::vector<TraceEvent> out;
  auto walk = adapter.appendBuffer(buf.data(), buf.size() - 8, out);  // the second record is cut short
  EXPECT_EQ(walk.records, 1u);
  EXPECT_EQ(out.size(), 1u);
  EXPECT_TRUE(adapter.appendBuffer(nullptr, 0, out).records == 0);
}

TEST(CuptiAdapter, MemcpyKindNamesAndMemoryKinds) {
  EXPECT_STREQ(memcpyKindName(CUPTI_ACTIVITY_MEMCPY_KIND_HTOD), "HtoD");
  EXPECT_STREQ(memcpyKindName(CUPTI_ACTIVITY_MEMCPY_KIND_DTOD), "DtoD");
  EXPECT_STREQ(memcpyKindName(CUPTI_ACTIVITY_MEMCPY_KIND_PTOP), "PtoP");
  EXPECT_STREQ(memcpyKindName(200), "copy");
  EXPECT_EQ(memoryKindOf(CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE), MemoryKind::host);
  EXPECT_EQ(memoryKindOf(CUPTI_ACTIVITY_MEMORY_KIND_PINNED), MemoryKind::pinned);
  EXPECT_EQ(memoryKindOf(CUPTI_ACTIVITY_MEMORY_KIND_DEVICE_STATIC), MemoryKind::device);
  EXPECT_EQ(memoryKindOf(CUPTI_ACTIVITY_MEMORY_KIND_MANAGED), MemoryKind::managed);
}
