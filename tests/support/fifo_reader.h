#pragma once
// Reads what a writer puts into a FIFO without any way to hang: our own read and write ends are
// open before the writer comes, so its open() never waits for a reader, and finish() sees the
// end once the writer and we have closed ours, also when the writer never came (then it is "").
#include <fcntl.h>
#include <unistd.h>

#include <string>

namespace attnscope::test {

class FifoReader {
 public:
  explicit FifoReader(const std::string& path)
      : read_(::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)), write_(::open(path.c_str(), O_WRONLY | O_CLOEXEC)) {
    if (read_ >= 0) ::fcntl(read_, F_SETFL, 0);  // blocking reads from here on
  }
  ~FifoReader() {
    if (write_ >= 0) ::close(write_);
    if (read_ >= 0) ::close(read_);
  }
  FifoReader(const FifoReader&) = delete;
  FifoReader& operator=(const FifoReader&) = delete;
  bool ok() const { return read_ >= 0 && write_ >= 0; }

  // Everything written so far and until the writer closes (call after it is done).
  std::string finish() {
    ::close(write_);
    write_ = -1;
    std::string out;
    char buf[4096];
    for (ssize_t n; (n = ::read(read_, buf, sizeof buf)) > 0;) out.append(buf, static_cast<size_t>(n));
    return out;
  }

 private:
  int read_, write_;
};

}  // namespace attnscope::test
