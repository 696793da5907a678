// The checks `run --inputs DIR` makes on the files it reads: a bf16 run refuses float32 values
// that are not bf16 values (they would be rounded silently, and the run would not be the one the
// user saved), and the mask file's dtype and shape must match the spec and its mask layout.

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstring>
#include <filesystem>
#include <string>

#include "core/spec/dtype.h"
#include "core/inputs/npy.h"
#include "core/inputs/run_files.h"
#include "tests/support/temp_dir.h"
#include "tests/support/spec_builder.h"

namespace attnscope {
namespace {

using test::TempDir;

WorkloadSpec spec(DType dtype, const char* mask, MaskLayout layout) {
  return test::specOf({.batch = 2, .heads = 2, .seq_q = 5, .seq_kv = 7, .head_dim = 4, .dtype = dtype, .mask = mask,
                       .layout = layout, .seed = 11});
}

// `run --dump` of generated inputs: what `run --inputs` must accept as it is.
void dump(const TempDir& dir, const WorkloadSpec& s) {
  const HostInputs in = HostInputs::generate(s);
  dumpRun(dir.str(), s, in, std::vector<float>(static_cast<size_t>(s.qElements()), 0.0f));
}

void expectRefused(const TempDir& dir, const WorkloadSpec& s, const std::string& file, const std::string& word) {
  try {
    (void)loadInputs(dir.str(), s);
    ADD_FAILURE() << file << " was accepted";
  } catch (const std::invalid_argument& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find(file), std::string::npos) << what;
    EXPECT_NE(what.find(word), std::string::npos) << what;
  }
}

TEST(NpyChecks, DumpedInputsLoadBackUnchanged) {
  for (DType d : {DType::fp32, DType::fp16, DType::bf16}) {
    const WorkloadSpec s = spec(d, "dense:0.5", MaskLayout::per_head);
    TempDir dir;
    dump(dir, s);
    const HostInputs want = HostInputs::generate(s);
    const HostInputs got = loadInputs(dir.str(), s);
    EXPECT_EQ(got.q.bytes, want.q.bytes) << toString(d);
    EXPECT_EQ(got.k.bytes, want.k.bytes) << toString(d);
    EXPECT_EQ(got.v.bytes, want.v.bytes) << toString(d);
    EXPECT_EQ(got.mask, want.mask) << toString(d);
  }
}

TEST(NpyChecks, Bf16RunRefusesAFloat32ValueThatIsNotABf16Value) {
  const WorkloadSpec s = spec(DType::bf16, "none", MaskLayout::broadcast);
  TempDir dir;
  dump(dir, s);
  NpyArray k = readNpy(dir.file("k.npy"));
  // 1 + 2^-12 needs more mantissa bits than bf16's 7; element 5 of k.
  const float notBf16 = 1.0f + 1.0f / 4096.0f;
  ASSERT_NE(bf16ToFloat(floatToBf16(notBf16)), notBf16);
  std::memcpy(k.data.data() + 5 * 4, &notBf16, 4);
  writeNpy(dir.file("k.npy"), k);
  expectRefused(dir, s, "k.npy", "bf16");
  // The same file is a valid fp32 input.
  WorkloadSpec fp32 = s;
  fp32.dtype = DType::fp32;
  EXPECT_NO_THROW((void)loadInputs(dir.str(), fp32));
  // And a bf16 value in that place is accepted.
  const float isBf16 = 1.0f + 1.0f / 128.0f;
  std::memcpy(k.data.data() + 5 * 4, &isBf16, 4);
  writeNpy(dir.file("k.npy"), k);
  EXPECT_NO_THROW((void)loadInputs(dir.str(), s));
}

TEST(NpyChecks, MaskOfAnotherDtypeIsRefused) {
  const WorkloadSpec s = spec(DType::fp32, "dense:0.5", MaskLayout::broadcast);
  TempDir dir;
  dump(dir, s);
  NpyArray m = readNpy(dir.file("mask.npy"));
  NpyArray asFloat;
  asFloat.descr = "<f4";
  asFloat.shape = m.shape;
  asFloat.data.resize(m.data.size() * 4);
  for (size_t i = 0; i < m.data.size(); ++i) {
    const float f = m.data[i] ? 1.0f : 0.0f;
    std::memcpy(asFloat.data.data() + i * 4, &f, 4);
  }
  writeNpy(dir.file("mask.npy"), asFloat);
  expectRefused(dir, s, "mask.npy", "<f4");
}

TEST(NpyChecks, MaskOfAnotherShapeOrLayoutIsRefused) {
  const WorkloadSpec broadcast = spec(DType::fp16, "dense:0.5", MaskLayout::broadcast);
  const WorkloadSpec perHead = spec(DType::fp16, "dense:0.5", MaskLayout::per_head);
  {
    // A [1,1,Lq,Lkv] mask for a per-head run, and a [B,H,Lq,Lkv] one for a broadcast run.
    TempDir dir;
    dump(dir, broadcast);
    expectRefused(dir, perHead, "mask.npy", "shape");
    dump(dir, perHead);
    expectRefused(dir, broadcast, "mask.npy", "shape");
  }
  {
    // Lq and Lkv swapped: as many elements, the wrong shape.
    TempDir dir;
    dump(dir, broadcast);
    NpyArray m = readNpy(dir.file("mask.npy"));
    m.shape = {1, 1, broadcast.seqKv(), broadcast.seq_q};
    writeNpy(dir.file("mask.npy"), m);
    expectRefused(dir, broadcast, "mask.npy", "shape");
  }
}

TEST(NpyChecks, MaskBytesBecomeZeroOrOne) {
  const WorkloadSpec s = spec(DType::fp32, "dense:0.5", MaskLayout::broadcast);
  TempDir dir;
  dump(dir, s);
  NpyArray m = readNpy(dir.file("mask.npy"));
  m.descr = "|u1";
  for (auto& b : m.data) b = b ? 7 : 0;
  writeNpy(dir.file("mask.npy"), m);
  const HostInputs in = loadInputs(dir.str(), s);
  EXPECT_EQ(in.mask, HostInputs::generate(s).mask);
}

}  // namespace
}  // namespace attnscope
