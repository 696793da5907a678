#include "core/npy.h"

#include <cstring>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

namespace attnscope {
namespace {

std::string shapeText(const std::vector<int64_t>& shape) {
  std::string s = "(";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + (shape.size() == 1 ? ",)" : ")");
}

int64_t itemSize(const std::string& descr) {
  if (descr.size() < 3) return -1;
  try {
    return std::stoll(descr.substr(2));
  } catch (...) {
    return -1;
  }
}

}  // namespace

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

NpyArray readNpy(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open (missing file?)");
  char magic[8];
  if (!in.read(magic, 8) || std::memcmp(magic, "\x93NUMPY", 6) != 0)
    throw std::runtime_error(path + ": not a NumPy .npy file (bad magic)");
  const int major = static_cast<unsigned char>(magic[6]);
  uint32_t hlen = 0;
  if (major == 1) {
    unsigned char b[2];
    if (!in.read(reinterpret_cast<char*>(b), 2)) throw std::runtime_error(path + ": truncated header");
    hlen = b[0] | (b[1] << 8);
  } else if (major == 2 || major == 3) {
    unsigned char b[4];
    if (!in.read(reinterpret_cast<char*>(b), 4)) throw std::runtime_error(path + ": truncated header");
    hlen = b[0] | (b[1] << 8) | (b[2] << 16) | (static_cast<uint32_t>(b[3]) << 24);
  } else {
    throw std::runtime_error(path + ": unsupported .npy format version " + std::to_string(major));
  }
  std::string header(hlen, '\0');
  if (!in.read(header.data(), hlen)) throw std::runtime_error(path + ": truncated header");
  NpyArray a;
  std::smatch m;
  if (!std::regex_search(header, m, std::regex("'descr'\\s*:\\s*'([^']+)'")))
    throw std::runtime_error(path + ": header has no descr");
  a.descr = m[1];
  if (std::regex_search(header, m, std::regex("'fortran_order'\\s*:\\s*True")))
    throw std::runtime_error(path + ": Fortran-ordered arrays are not supported (save with C order)");
  if (!std::regex_search(header, m, std::regex("'shape'\\s*:\\s*\\(([^)]*)\\)")))
    throw std::runtime_error(path + ": header has no shape");
  std::stringstream ss(m[1].str());
  std::string item;
  while (std::getline(ss, item, ',')) {
    item.erase(0, item.find_first_not_of(" L"));
    item.erase(item.find_last_not_of(" L") + 1);
    if (!item.empty()) a.shape.push_back(std::stoll(item));
  }
  int64_t n = 1;
  for (int64_t d : a.shape) n *= d;
  const int64_t isz = itemSize(a.descr);
  if (isz <= 0) throw std::runtime_error(path + ": unsupported dtype " + a.descr);
  a.data.resize(static_cast<size_t>(n * isz));
  in.read(reinterpret_cast<char*>(a.data.data()), static_cast<std::streamsize>(a.data.size()));
  if (in.gcount() != static_cast<std::streamsize>(a.data.size()))
    throw std::runtime_error(path + ": truncated: header promises " + std::to_string(a.data.size()) +
                             " data bytes, file has " + std::to_string(in.gcount()));
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

HostTensor npyToTensor(const std::string& path, const NpyArray& a, DType dtype, const std::vector<int64_t>& shape) {
  const std::string want = dtype == DType::fp16 ? "<f2" : "<f4";
  if (a.descr != want)
    throw std::invalid_argument(path + ": dtype " + a.descr + " does not match --dtype " + std::string(toString(dtype)) +
                                " (expected " + want + (dtype == DType::bf16 ? ", float32 holding bf16 values" : "") + ")");
  if (a.shape != shape)
    throw std::invalid_argument(path + ": shape " + shapeText(a.shape) + " does not match the spec's " + shapeText(shape));
  HostTensor t = HostTensor::zeros(dtype, shape);
  if (dtype == DType::fp16) {
    t.bytes = a.data;
    return t;
  }
  for (int64_t i = 0; i < t.elements(); ++i) {
    float f;
    std::memcpy(&f, a.data.data() + i * 4, 4);
    if (dtype == DType::bf16 && bf16ToFloat(floatToBf16(f)) != f && f == f)
      throw std::invalid_argument(path + ": element " + std::to_string(i) + " (" + std::to_string(f) +
                                  ") is not a bf16 value; round the array to bfloat16 first");
    t.set(i, f);
  }
  return t;
}

}  // namespace

void dumpRun(const std::string& dir, const WorkloadSpec& s, const HostInputs& in, const std::vector<float>& output) {
  std::filesystem::create_directories(dir);
  const auto p = [&](const char* name) { return (std::filesystem::path(dir) / name).string(); };
  writeNpy(p("q.npy"), tensorToNpy(in.q));
  writeNpy(p("k.npy"), tensorToNpy(in.k));
  writeNpy(p("v.npy"), tensorToNpy(in.v));
  HostTensor o = HostTensor::zeros(s.dtype, {s.batch, s.heads, s.seq_q, s.headDim()});
  for (int64_t i = 0; i < o.elements() && i < static_cast<int64_t>(output.size()); ++i) o.set(i, output[i]);
  writeNpy(p("out.npy"), tensorToNpy(o));
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
  auto read = [&](const std::string& path) {
    try {
      return readNpy(path);
    } catch (const std::runtime_error& e) {
      throw std::invalid_argument(e.what());
    }
  };
  HostInputs in;
  const int64_t d = s.headDim();
  in.q = npyToTensor(p("q.npy"), read(p("q.npy")), s.dtype, {s.batch, s.heads, s.seq_q, d});
  in.k = npyToTensor(p("k.npy"), read(p("k.npy")), s.dtype, {s.batch, s.kvHeads(), s.seqKv(), d});
  in.v = npyToTensor(p("v.npy"), read(p("v.npy")), s.dtype, {s.batch, s.kvHeads(), s.seqKv(), d});
  if (s.mask.kind == MaskKind::dense) {
    NpyArray m = read(p("mask.npy"));
    std::vector<int64_t> want = s.mask_layout == MaskLayout::per_head
                                    ? std::vector<int64_t>{s.batch, s.heads, s.seq_q, s.seqKv()}
                                    : std::vector<int64_t>{1, 1, s.seq_q, s.seqKv()};
    if (m.descr != "|b1" && m.descr != "|u1")
      throw std::invalid_argument(p("mask.npy") + ": dtype " + m.descr + " is not bool (|b1)");
    if (m.shape != want)
      throw std::invalid_argument(p("mask.npy") + ": shape " + shapeText(m.shape) + " does not match the spec's " +
                                  shapeText(want) + " (mask layout " + std::string(toString(s.mask_layout)) + ")");
    in.mask = std::move(m.data);
    for (auto& b : in.mask) b = b ? 1 : 0;
  }
  return in;
}

}  // namespace attnscope
