// The .npy reader decides nothing from a header until it is checked against the file: header
// length, shape product (overflow-safe), dtype and file size come before any allocation; only
// regular files are read; trailing bytes and non-finite inputs are refused, naming the file. The
// writer of a run's files replaces only regular files.
#include <gtest/gtest.h>
#include <fcntl.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <future>
#include <limits>

#include "core/inputs/npy.h"
#include "core/inputs/run_files.h"
#include "tests/support/temp_dir.h"

using namespace attnscope;

namespace {

std::string npyBytes(const std::string& descr, const std::string& shape, size_t dataBytes, int version = 1,
                     int64_t claimedHeaderLen = -1) {
  std::string h = "{'descr': '" + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
  h.append((64 - (10 + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  const int64_t len = claimedHeaderLen >= 0 ? claimedHeaderLen : static_cast<int64_t>(h.size());
  std::string out("\x93NUMPY", 6);
  out += static_cast<char>(version);
  out += '\0';
  for (int i = 0; i < (version == 1 ? 2 : 4); ++i) out += static_cast<char>((len >> (8 * i)) & 0xff);
  return out + h + std::string(dataBytes, '\0');
}

void expectRefused(const std::string& bytes, std::initializer_list<std::string> fragments) {
  try {
    (void)parseNpy(bytes, "x.npy");
    ADD_FAILURE() << "accepted";
  } catch (const NpyError& e) {
    const std::string msg = e.what();
    EXPECT_EQ(msg.rfind("x.npy: ", 0), 0u) << msg;
    for (const auto& f : fragments) EXPECT_NE(msg.find(f), std::string::npos) << msg << " lacks " << f;
  }
}

using test::TempDir;

void writeFile(const std::string& path, const std::string& bytes) { std::ofstream(path, std::ios::binary) << bytes; }

}  // namespace

TEST(NpyReader, ReadsWhatItWrites) {
  NpyArray a = parseNpy(npyBytes("<f4", "(2, 3)", 24), "x.npy");
  EXPECT_EQ(a.shape, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(a.data.size(), 24u);
  EXPECT_EQ(parseNpy(npyBytes("|b1", "(0,)", 0), "x.npy").data.size(), 0u);
  EXPECT_EQ(parseNpy(npyBytes("<f2", "()", 2), "x.npy").shape.size(), 0u);
}

TEST(NpyReader, SizesFromTheHeaderAreCheckedBeforeAllocating) {
  // The files: an 8 KB file claiming 4 GiB, a v2 header length of 0xF0000000.
  expectRefused(npyBytes("<f4", "(1, 1, 1024, 1048576)", 8000), {"truncated", "4294967296", "8000"});
  expectRefused(npyBytes("<f4", "(1, 1, 4, 4)", 64, 2, 0xF0000000), {"header length 4026531840", "65536"});
  expectRefused(npyBytes("<f4", "(4294967296, 4294967296, 4)", 0), {"64-bit size"});
  expectRefused(npyBytes("<f4", "(99999999999999999999, 4)", 0), {"64-bit integer"});
  expectRefused(npyBytes("<f4", "(2, 2)", 16 + 3), {"3 trailing bytes"});
  expectRefused(npyBytes("<f4", "(2, 2)", 15), {"truncated", "16", "15"});
  expectRefused(npyBytes("<f4", "(2, 2)", 16, 1, 10000), {"truncated"});
}

TEST(NpyReader, BadHeadersNameTheFileAndWhatWasExpected) {
  expectRefused(npyBytes("<f8", "(2,)", 16), {"unsupported dtype '<f8'", "<f4 (float32)"});
  expectRefused(npyBytes(">f4", "(2,)", 8), {"unsupported dtype '>f4'"});
  expectRefused(npyBytes("<f4", "(2, abc)", 8), {"shape must be a tuple of non-negative integers"});
  expectRefused(npyBytes("<f4", "(-2,)", 8), {"non-negative"});
  expectRefused(npyBytes("<f4", "(1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1,1)", 4), {"more than 32"});
  expectRefused("\x93NUMPX\x01\x00", {"bad magic"});
  expectRefused(std::string("\x93NUMPY\x07\x00\x10\x00", 10), {"version 7"});
  expectRefused(std::string("\x93NUMPY\x01", 7), {"bad magic"});
  std::string fortran = npyBytes("<f4", "(2,)", 8);
  fortran.replace(fortran.find("False"), 5, "True ");
  expectRefused(fortran, {"Fortran"});
}

TEST(NpyReader, OnlyRegularFilesAreRead) {
  TempDir d;
  const std::string fifo = d.file("q.npy");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // A FIFO with no writer would block a plain open() forever.
  auto f = std::async(std::launch::async, [&] {
    try {
      readNpy(fifo);
      return std::string("accepted");
    } catch (const NpyError& e) {
      return std::string(e.what());
    }
  });
  ASSERT_EQ(f.wait_for(std::chrono::seconds(30)), std::future_status::ready) << "readNpy blocked on a FIFO";
  EXPECT_NE(f.get().find("not a regular file"), std::string::npos);
  EXPECT_THROW(readNpy(d.str()), NpyError);  // a folder
  EXPECT_THROW(readNpy(d.file("missing.npy")), NpyError);
}

// The one writer of a run's files (--dump, the torch worker's inputs) creates a temporary and
// renames it: a link is never written through, a FIFO never opened.
TEST(NpyReader, TheWriterNeverWritesThroughALinkNorWaitsOnAFifo) {
  TempDir d, elsewhere;
  WorkloadSpec s;
  s.heads = 1;
  s.seq_q = 2;
  s.head_dim = 2;
  const HostInputs in = HostInputs::generate(s);
  const std::string precious = elsewhere.file("precious");
  std::ofstream(precious) << "precious";
  std::filesystem::create_symlink(precious, d.file("q.npy"));
  ASSERT_EQ(mkfifo(d.file("k.npy").c_str(), 0600), 0);
  auto attempt = [&] {
    return std::async(std::launch::async, [&] {
      try {
        writeRunInputs(d.str(), s, in, false, OutputUse::scratch);
        return std::string("written");
      } catch (const OutputRefused& e) {
        return std::string(e.what());
      }
    });
  };
  // A writer stuck opening the FIFO is let go (a reader appears) and fails the test.
  auto outcome = [&](std::future<std::string> f) {
    if (f.wait_for(std::chrono::seconds(30)) == std::future_status::ready) return f.get();
    const int release = ::open(d.file("k.npy").c_str(), O_RDONLY | O_NONBLOCK);
    f.wait();
    ::close(release);
    return std::string("the writer opened the FIFO and waited for a reader");
  };
  const std::string first = outcome(attempt());
  EXPECT_NE(first.find("q.npy is a symbolic link"), std::string::npos) << first;
  std::ifstream back(precious);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(back), {}), "precious");
  std::filesystem::remove(d.file("q.npy"));
  const std::string second = outcome(attempt());
  EXPECT_NE(second.find("k.npy is a FIFO"), std::string::npos) << second;
  std::filesystem::remove(d.file("k.npy"));
  EXPECT_EQ(attempt().get(), "written");
  for (const auto& e : std::filesystem::directory_iterator(d.path()))
    EXPECT_NE(e.path().filename().string()[0], '.') << "left behind: " << e.path();
}

TEST(NpyReader, InputsAreCheckedAgainstTheSpecAndMustBeFinite) {
  TempDir d;
  WorkloadSpec s;
  s.heads = 1;
  s.seq_q = 2;
  s.head_dim = 2;
  const HostInputs in = HostInputs::generate(s);
  dumpRun(d.str(), s, in, std::vector<float>(4, 0.0f));
  EXPECT_NO_THROW(loadInputs(d.str(), s));
  NpyArray q = readNpy(d.file("q.npy"));
  const float inf = std::numeric_limits<float>::infinity();
  std::memcpy(q.data.data() + 3 * 4, &inf, 4);
  writeNpy(d.file("q.npy"), q);
  try {
    loadInputs(d.str(), s);
    ADD_FAILURE() << "an Inf input was accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("q.npy: element (0, 0, 1, 1) is inf"), std::string::npos) << e.what();
  }
  // A shape that does not match the spec is refused from the header, before its data is read.
  writeFile(d.file("q.npy"), npyBytes("<f4", "(1, 1, 1024, 1048576)", 0));
  try {
    loadInputs(d.str(), s);
    ADD_FAILURE() << "accepted";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("q.npy"), std::string::npos) << e.what();
  }
}
