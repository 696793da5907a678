#include "core/inputs/npy.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <functional>

#include <cstring>
#include <filesystem>

namespace attnscope {
namespace {

constexpr std::string_view kSupportedDescr = "<f4 (float32), <f2 (float16) or |b1 (bool)";

int64_t itemSize(std::string_view descr) {
  if (descr == "<f4") return 4;
  if (descr == "<f2") return 2;
  if (descr == "|b1" || descr == "|u1") return 1;
  return -1;
}

// A strict reader of the Python dict literal NumPy writes as the header.
class HeaderDict {
 public:
  HeaderDict(std::string_view text, const std::string& name) : t_(text), name_(name) {}

  NpyHeader parse() {
    NpyHeader h;
    bool haveDescr = false, haveOrder = false, haveShape = false;
    expect('{');
    for (;;) {
      skipSpace();
      if (peek() == '}') break;
      const std::string key = quoted();
      skipSpace();
      expect(':');
      skipSpace();
      if (key == "descr") {
        if (haveDescr) fail("'descr' given twice");
        h.descr = quoted();
        haveDescr = true;
      } else if (key == "fortran_order") {
        if (haveOrder) fail("'fortran_order' given twice");
        if (word("True")) fail("Fortran-ordered arrays are not supported (save with C order)");
        if (!word("False")) fail("'fortran_order' must be True or False");
        haveOrder = true;
      } else if (key == "shape") {
        if (haveShape) fail("'shape' given twice");
        h.shape = shape();
        haveShape = true;
      } else {
        fail("unexpected header key '" + key + "' (expected descr, fortran_order, shape)");
      }
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != '}') fail("expected ',' or '}' in the header");
    }
    ++pos_;
    skipSpace();
    if (pos_ != t_.size()) fail("unexpected text after the header dict");
    if (!haveDescr) fail("header has no descr");
    if (!haveShape) fail("header has no shape");
    return h;
  }

 private:
  [[noreturn]] void fail(const std::string& why) const { throw NpyError(name_ + ": " + why); }
  char peek() const { return pos_ < t_.size() ? t_[pos_] : '\0'; }
  void skipSpace() {
    while (pos_ < t_.size() && (t_[pos_] == ' ' || t_[pos_] == '\n' || t_[pos_] == '\t' || t_[pos_] == '\r')) ++pos_;
  }
  void expect(char c) {
    skipSpace();
    if (peek() != c) fail(std::string("malformed header: expected '") + c + "'");
    ++pos_;
  }
  bool word(std::string_view w) {
    if (t_.substr(pos_, w.size()) != w) return false;
    pos_ += w.size();
    return true;
  }
  std::string quoted() {
    const char q = peek();
    if (q != '\'' && q != '"') fail("malformed header: expected a quoted string");
    const size_t close = t_.find(q, pos_ + 1);
    if (close == std::string_view::npos || close - pos_ > 64) fail("malformed header: unterminated string");
    std::string out(t_.substr(pos_ + 1, close - pos_ - 1));
    pos_ = close + 1;
    return out;
  }
  std::vector<int64_t> shape() {
    std::vector<int64_t> dims;
    expect('(');
    for (;;) {
      skipSpace();
      if (peek() == ')') break;
      if (peek() < '0' || peek() > '9') fail("shape must be a tuple of non-negative integers");
      int64_t v = 0;
      while (peek() >= '0' && peek() <= '9') {
        if (__builtin_mul_overflow(v, 10, &v) || __builtin_add_overflow(v, peek() - '0', &v))
          fail("shape dimension does not fit a 64-bit integer");
        ++pos_;
      }
      if (peek() == 'L') ++pos_;  // Python 2 long suffix
      dims.push_back(v);
      if (dims.size() > kNpyMaxRank) fail("shape has more than " + std::to_string(kNpyMaxRank) + " dimensions");
      skipSpace();
      if (peek() == ',') {
        ++pos_;
        continue;
      }
      if (peek() != ')') fail("shape must be a tuple of non-negative integers");
    }
    ++pos_;
    return dims;
  }

  std::string_view t_;
  const std::string& name_;
  size_t pos_ = 0;
};

int64_t fileSizeOf(int fd, const std::string& path) {
  struct stat st{};
  if (::fstat(fd, &st) != 0) throw NpyError(path + ": cannot stat: " + std::strerror(errno));
  if (!S_ISREG(st.st_mode))
    throw NpyError(path + ": not a regular file (a FIFO, device or folder cannot be read as .npy)");
  return static_cast<int64_t>(st.st_size);
}

// Reads exactly n bytes at the current offset; false on a short read (the file shrank).
bool readExactly(int fd, char* out, int64_t n) {
  while (n > 0) {
    const ssize_t got = ::read(fd, out, static_cast<size_t>(std::min<int64_t>(n, int64_t{1} << 30)));
    if (got < 0 && errno == EINTR) continue;
    if (got <= 0) return false;
    out += got;
    n -= got;
  }
  return true;
}

struct Fd {
  int fd;
  ~Fd() {
    if (fd >= 0) ::close(fd);
  }
};

}  // namespace

std::string npyShapeText(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

NpyHeader parseNpyHeader(std::string_view prefix, int64_t file_size, const std::string& name) {
  if (prefix.size() < 8 || prefix.substr(0, 6) != std::string_view("\x93NUMPY", 6))
    throw NpyError(name + ": not a NumPy .npy file (bad magic)");
  const int major = static_cast<unsigned char>(prefix[6]);
  if (major < 1 || major > 3)
    throw NpyError(name + ": unsupported .npy format version " + std::to_string(major) + " (expected 1, 2 or 3)");
  const size_t lenBytes = major == 1 ? 2 : 4;
  if (prefix.size() < 8 + lenBytes) throw NpyError(name + ": truncated header");
  int64_t hlen = 0;
  for (size_t i = 0; i < lenBytes; ++i) hlen |= static_cast<int64_t>(static_cast<unsigned char>(prefix[8 + i])) << (8 * i);
  if (hlen > kNpyMaxHeaderBytes)
    throw NpyError(name + ": header length " + std::to_string(hlen) + " exceeds the " +
                   std::to_string(kNpyMaxHeaderBytes) + " bytes a .npy header may have here");
  NpyHeader h;
  h.data_offset = static_cast<int64_t>(8 + lenBytes) + hlen;
  if (h.data_offset > file_size)
    throw NpyError(name + ": truncated: the header claims " + std::to_string(hlen) + " bytes, the file has " +
                   std::to_string(file_size) + " in all");
  if (static_cast<int64_t>(prefix.size()) < h.data_offset) throw NpyError(name + ": truncated header");
  const NpyHeader dict = HeaderDict(prefix.substr(8 + lenBytes, static_cast<size_t>(hlen)), name).parse();
  h.descr = dict.descr;
  h.shape = dict.shape;
  h.item_size = itemSize(h.descr);
  if (h.item_size < 0)
    throw NpyError(name + ": unsupported dtype '" + h.descr + "' (expected " + std::string(kSupportedDescr) + ")");
  int64_t bytes = h.item_size;
  for (int64_t d : h.shape)
    if (__builtin_mul_overflow(bytes, d, &bytes))
      throw NpyError(name + ": shape " + npyShapeText(h.shape) + " has more bytes than a 64-bit size can hold");
  h.data_bytes = bytes;
  const int64_t have = file_size - h.data_offset;
  if (have < bytes)
    throw NpyError(name + ": truncated: shape " + npyShapeText(h.shape) + " " + h.descr + " needs " + std::to_string(bytes) +
                   " data bytes, the file has " + std::to_string(have));
  if (have > bytes)
    throw NpyError(name + ": " + std::to_string(have - bytes) + " trailing bytes after the " + std::to_string(bytes) +
                   " data bytes of shape " + npyShapeText(h.shape) + " " + h.descr);
  return h;
}

NpyArray parseNpy(std::string_view bytes, const std::string& name) {
  const NpyHeader h = parseNpyHeader(bytes, static_cast<int64_t>(bytes.size()), name);
  NpyArray a;
  a.descr = h.descr;
  a.shape = h.shape;
  const char* data = bytes.data() + h.data_offset;
  a.data.assign(data, data + h.data_bytes);
  return a;
}

void writeNpy(const std::string& path, const NpyArray& a, OutputUse use) {
  std::string header = "{'descr': '" + a.descr + "', 'fortran_order': False, 'shape': " + npyShapeText(a.shape) + ", }";
  // magic(6) + version(2) + len(2) + header + '\n', padded to a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  const uint16_t len = static_cast<uint16_t>(header.size());
  const std::string prefix = std::string("\x93NUMPY\x01\x00", 8) + static_cast<char>(len & 0xff) +
                             static_cast<char>(len >> 8) + header;
  const std::string_view data(reinterpret_cast<const char*>(a.data.data()), a.data.size());
  writeOutputFile(path, {prefix, data}, OutputRule::entry, use);
}

NpyArray readNpy(const std::string& path, const std::function<void(const NpyHeader&)>& check) {
  // O_NONBLOCK: opening a FIFO must not wait for a writer; it is refused by fstat below.
  Fd f{::open(path.c_str(), O_RDONLY | O_NONBLOCK | O_CLOEXEC)};
  if (f.fd < 0) throw NpyError(path + ": cannot open: " + std::strerror(errno));
  const int64_t size = fileSizeOf(f.fd, path);
  // The header is read in full (bounded by kNpyMaxHeaderBytes) and checked against the file size
  // before the data is allocated.
  std::string prefix(static_cast<size_t>(std::min<int64_t>(size, 12 + kNpyMaxHeaderBytes)), '\0');
  if (!readExactly(f.fd, prefix.data(), static_cast<int64_t>(prefix.size())))
    throw NpyError(path + ": read failed: " + std::strerror(errno));
  const NpyHeader h = parseNpyHeader(prefix, size, path);
  if (check) check(h);
  NpyArray a;
  a.descr = h.descr;
  a.shape = h.shape;
  a.data.resize(static_cast<size_t>(h.data_bytes));
  const int64_t inPrefix = std::min<int64_t>(h.data_bytes, static_cast<int64_t>(prefix.size()) - h.data_offset);
  std::memcpy(a.data.data(), prefix.data() + h.data_offset, static_cast<size_t>(inPrefix));
  if (!readExactly(f.fd, reinterpret_cast<char*>(a.data.data()) + inPrefix, h.data_bytes - inPrefix))
    throw NpyError(path + ": truncated while reading (the file changed?)");
  return a;
}

}  // namespace attnscope
