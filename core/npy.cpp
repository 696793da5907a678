#include "core/npy.h"

#include "core/backend.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <functional>

#include <cstring>
#include <filesystem>
#include <fstream>

namespace attnscope {
namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

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
      throw NpyError(name + ": shape " + shapeText(h.shape) + " has more bytes than a 64-bit size can hold");
  h.data_bytes = bytes;
  const int64_t have = file_size - h.data_offset;
  if (have < bytes)
    throw NpyError(name + ": truncated: shape " + shapeText(h.shape) + " " + h.descr + " needs " + std::to_string(bytes) +
                   " data bytes, the file has " + std::to_string(have));
  if (have > bytes)
    throw NpyError(name + ": " + std::to_string(have - bytes) + " trailing bytes after the " + std::to_string(bytes) +
                   " data bytes of shape " + shapeText(h.shape) + " " + h.descr);
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

void writeNpy(const std::string& path, const NpyArray& a) {
  std::string header = "{'descr': '" + a.descr + "', 'fortran_order': False, 'shape': " + shapeText(a.shape) + ", }";
  // magic(6) + version(2) + len(2) + header + '\n', padded to a multiple of 64.
  size_t total = 10 + header.size() + 1;
  header.append((64 - total % 64) % 64, ' ');
  header += '\n';
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  if (!out) throw std::runtime_error(path + ": cannot open for writing");
  const char magic[] = "\x93NUMPY\x01\x00";
  out.write(magic, 8);
  uint16_t len = static_cast<uint16_t>(header.size());
  out.put(static_cast<char>(len & 0xff));
  out.put(static_cast<char>(len >> 8));
  out.write(header.data(), static_cast<std::streamsize>(header.size()));
  out.write(reinterpret_cast<const char*>(a.data.data()), static_cast<std::streamsize>(a.data.size()));
  if (!out) throw std::runtime_error(path + ": write failed");
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

namespace {

NpyArray tensorToNpy(const HostTensor& t) {
  NpyArray a;
  a.shape = t.shape;
  if (t.dtype == DType::fp16) {
    a.descr = "<f2";
    a.data = t.bytes;
  } else {
    a.descr = "<f4";
    a.data.resize(static_cast<size_t>(t.elements() * 4));
    for (int64_t i = 0; i < t.elements(); ++i) {
      float f = t.at(i);
      std::memcpy(a.data.data() + i * 4, &f, 4);
    }
  }
  return a;
}

std::string tensorDescr(DType dtype) { return dtype == DType::fp16 ? "<f2" : "<f4"; }

// Dtype and shape against the spec, from the header alone, before the data is read.
void checkTensorHeader(const std::string& path, const NpyHeader& h, DType dtype, const std::vector<int64_t>& shape) {
  const std::string want = tensorDescr(dtype);
  if (h.descr != want)
    throw NpyError(path + ": dtype " + h.descr + " does not match --dtype " + std::string(toString(dtype)) +
                   " (expected " + want + (dtype == DType::bf16 ? ", float32 holding bf16 values" : "") + ")");
  if (h.shape != shape)
    throw NpyError(path + ": shape " + shapeText(h.shape) + " does not match the spec's " + shapeText(shape));
}

std::string elementText(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = shape[k] ? flat % shape[k] : 0;
    flat = shape[k] ? flat / shape[k] : 0;
  }
  return "element " + shapeText(idx);
}

HostTensor npyToTensor(const std::string& path, const NpyArray& a, DType dtype, const std::vector<int64_t>& shape) {
  HostTensor t = HostTensor::zeros(dtype, shape);
  if (dtype == DType::fp16) {
    t.bytes = a.data;
    for (int64_t i = 0; i < t.elements(); ++i)
      if (!std::isfinite(t.at(i)))
        throw std::invalid_argument(path + ": " + elementText(shape, i) + " is " + std::to_string(t.at(i)) +
                                    "; inputs must be finite");
    return t;
  }
  for (int64_t i = 0; i < t.elements(); ++i) {
    float f;
    std::memcpy(&f, a.data.data() + i * 4, 4);
    if (!std::isfinite(f))
      throw std::invalid_argument(path + ": " + elementText(shape, i) + " is " + std::to_string(f) +
                                  "; inputs must be finite");
    if (dtype == DType::bf16 && bf16ToFloat(floatToBf16(f)) != f)
      throw std::invalid_argument(path + ": " + elementText(shape, i) + " (" + std::to_string(f) +
                                  ") is not a bf16 value; round the array to bfloat16 first");
    t.set(i, f);
  }
  return t;
}

}  // namespace

void dumpRun(const std::string& dir, const WorkloadSpec& s, const HostInputs& in, const std::vector<float>& output,
             const AttentionGradients* gradients, const LayerGradients* layerGradients) {
  std::filesystem::create_directories(dir);
  const auto p = [&](const char* name) { return (std::filesystem::path(dir) / name).string(); };
  // Float results are stored rounded to the spec's dtype, as the backend held them.
  const auto writeFloats = [&](const char* name, const std::vector<float>& values, std::vector<int64_t> shape) {
    HostTensor t = HostTensor::zeros(s.dtype, std::move(shape));
    for (int64_t i = 0; i < t.elements() && i < static_cast<int64_t>(values.size()); ++i) t.set(i, values[static_cast<size_t>(i)]);
    writeNpy(p(name), tensorToNpy(t));
  };
  if (s.kind == WorkloadKind::layer) {
    const LayerShapes z(s);
    writeNpy(p("x.npy"), tensorToNpy(in.x));
    writeNpy(p("w_qkv.npy"), tensorToNpy(in.w_qkv));
    writeNpy(p("b_qkv.npy"), tensorToNpy(in.b_qkv));
    writeNpy(p("w_o.npy"), tensorToNpy(in.w_o));
    writeNpy(p("b_o.npy"), tensorToNpy(in.b_o));
    writeFloats("out.npy", output, z.x);
    if (s.pass == Pass::train && in.g.elements() > 0) writeNpy(p("g.npy"), tensorToNpy(in.g));
    if (s.pass == Pass::train && layerGradients && !layerGradients->dx.empty()) {
      writeFloats("dx.npy", layerGradients->dx, z.x);
      writeFloats("dw_qkv.npy", layerGradients->dw_qkv, z.w_qkv);
      writeFloats("db_qkv.npy", layerGradients->db_qkv, z.b_qkv);
      writeFloats("dw_o.npy", layerGradients->dw_o, z.w_o);
      writeFloats("db_o.npy", layerGradients->db_o, z.b_o);
    }
  } else {
    writeNpy(p("q.npy"), tensorToNpy(in.q));
    writeNpy(p("k.npy"), tensorToNpy(in.k));
    writeNpy(p("v.npy"), tensorToNpy(in.v));
  }
  const std::vector<int64_t> qShape{s.batch, s.heads, s.seq_q, s.headDim()}, kvShape{s.batch, s.kvHeads(), s.seqKv(), s.headDim()};
  if (s.kind != WorkloadKind::layer) writeFloats("out.npy", output, qShape);
  if (s.kind != WorkloadKind::layer && s.pass == Pass::train && in.g.elements() > 0) writeNpy(p("g.npy"), tensorToNpy(in.g));
  if (s.kind != WorkloadKind::layer && s.pass == Pass::train && gradients && !gradients->dq.empty()) {
    writeFloats("dq.npy", gradients->dq, qShape);
    writeFloats("dk.npy", gradients->dk, kvShape);
    writeFloats("dv.npy", gradients->dv, kvShape);
  }
  if (s.mask.kind == MaskKind::dense) {
    NpyArray m;
    m.descr = "|b1";
    m.shape = s.mask_layout == MaskLayout::per_head ? std::vector<int64_t>{s.batch, s.heads, s.seq_q, s.seqKv()}
                                                   : std::vector<int64_t>{1, 1, s.seq_q, s.seqKv()};
    m.data = in.mask;
    writeNpy(p("mask.npy"), m);
  }
}

HostInputs loadInputs(const std::string& dir, const WorkloadSpec& s) {
  const auto p = [&](const char* name) { return (std::filesystem::path(dir) / name).string(); };
  auto read = [&](const std::string& path, const std::function<void(const NpyHeader&)>& check) {
    try {
      return readNpy(path, check);
    } catch (const std::runtime_error& e) {
      throw std::invalid_argument(e.what());
    } catch (const std::bad_alloc&) {
      throw std::invalid_argument(path + ": not enough memory to read it");
    }
  };
  auto tensor = [&](const char* name, const std::vector<int64_t>& shape) {
    const std::string path = p(name);
    const NpyArray a = read(path, [&](const NpyHeader& h) { checkTensorHeader(path, h, s.dtype, shape); });
    return npyToTensor(path, a, s.dtype, shape);
  };
  HostInputs in;
  const int64_t d = s.headDim();
  if (s.kind == WorkloadKind::layer) {
    const LayerShapes z(s);
    in.x = tensor("x.npy", z.x);
    in.w_qkv = tensor("w_qkv.npy", z.w_qkv);
    in.b_qkv = tensor("b_qkv.npy", z.b_qkv);
    in.w_o = tensor("w_o.npy", z.w_o);
    in.b_o = tensor("b_o.npy", z.b_o);
    if (s.pass == Pass::train) in.g = tensor("g.npy", z.x);
  } else {
    in.q = tensor("q.npy", {s.batch, s.heads, s.seq_q, d});
    in.k = tensor("k.npy", {s.batch, s.kvHeads(), s.seqKv(), d});
    in.v = tensor("v.npy", {s.batch, s.kvHeads(), s.seqKv(), d});
    if (s.pass == Pass::train) in.g = tensor("g.npy", {s.batch, s.heads, s.seq_q, d});
  }
  if (s.mask.kind == MaskKind::dense) {
    const std::string path = p("mask.npy");
    const std::vector<int64_t> want = s.mask_layout == MaskLayout::per_head
                                          ? std::vector<int64_t>{s.batch, s.heads, s.seq_q, s.seqKv()}
                                          : std::vector<int64_t>{1, 1, s.seq_q, s.seqKv()};
    NpyArray m = read(path, [&](const NpyHeader& h) {
      if (h.descr != "|b1" && h.descr != "|u1") throw NpyError(path + ": dtype " + h.descr + " is not bool (|b1)");
      if (h.shape != want)
        throw NpyError(path + ": shape " + shapeText(h.shape) + " does not match the spec's " + shapeText(want) +
                       " (mask layout " + std::string(toString(s.mask_layout)) + ")");
    });
    in.mask = std::move(m.data);
    for (auto& b : in.mask) b = b ? 1 : 0;
  }
  return in;
}

}  // namespace attnscope
