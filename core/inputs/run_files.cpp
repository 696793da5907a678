#include "core/inputs/run_files.h"

#include <cmath>
#include <cstring>
#include <filesystem>
#include <functional>
#include <stdexcept>

#include "core/spec/mask.h"

namespace attnscope {
namespace {

std::string fileIn(const std::string& dir, const char* name) { return (std::filesystem::path(dir) / name).string(); }

std::string tensorDescr(DType dtype) { return dtype == DType::fp16 ? "<f2" : "<f4"; }

std::vector<int64_t> maskShape(const WorkloadSpec& s) {
  // A causal mask is the same in every head, whatever the layout says.
  const bool perHead = s.mask_layout == MaskLayout::per_head && s.mask.kind != MaskKind::causal;
  return perHead ? std::vector<int64_t>{s.batch, s.heads, s.seq_q, s.seqKv()}
                 : std::vector<int64_t>{1, 1, s.seq_q, s.seqKv()};
}

// Dtype and shape against the spec, from the header alone, before the data is read.
void checkTensorHeader(const std::string& path, const NpyHeader& h, DType dtype, const std::vector<int64_t>& shape) {
  const std::string want = tensorDescr(dtype);
  if (h.descr != want)
    throw NpyError(path + ": dtype " + h.descr + " does not match --dtype " + std::string(toString(dtype)) +
                   " (expected " + want + (dtype == DType::bf16 ? ", float32 holding bf16 values" : "") + ")");
  if (h.shape != shape)
    throw NpyError(path + ": shape " + npyShapeText(h.shape) + " does not match the spec's " + npyShapeText(shape));
}

std::string elementText(const std::vector<int64_t>& shape, int64_t flat) {
  std::vector<int64_t> idx(shape.size());
  for (size_t k = shape.size(); k-- > 0;) {
    idx[k] = shape[k] ? flat % shape[k] : 0;
    flat = shape[k] ? flat / shape[k] : 0;
  }
  return "element " + npyShapeText(idx);
}

// Every value must be finite; an additive mask (`mask`) may also hold -inf, which drops a key.
HostTensor npyToTensor(const std::string& path, const NpyArray& a, DType dtype, const std::vector<int64_t>& shape,
                       bool mask = false) {
  const auto allowed = [mask](float f) { return std::isfinite(f) || (mask && f == -INFINITY); };
  const char* rule = mask ? "; an additive mask must be finite or -inf" : "; inputs must be finite";
  HostTensor t = HostTensor::zeros(dtype, shape);
  if (dtype == DType::fp16) {
    t.bytes = a.data;
    for (int64_t i = 0; i < t.elements(); ++i)
      if (!allowed(t.at(i)))
        throw std::invalid_argument(path + ": " + elementText(shape, i) + " is " + std::to_string(t.at(i)) + rule);
    return t;
  }
  for (int64_t i = 0; i < t.elements(); ++i) {
    float f;
    std::memcpy(&f, a.data.data() + i * 4, 4);
    if (!allowed(f))
      throw std::invalid_argument(path + ": " + elementText(shape, i) + " is " + std::to_string(f) + rule);
    if (dtype == DType::bf16 && bf16ToFloat(floatToBf16(f)) != f)
      throw std::invalid_argument(path + ": " + elementText(shape, i) + " (" + std::to_string(f) +
                                  ") is not a bf16 value; round the array to bfloat16 first");
    t.set(i, f);
  }
  return t;
}

}  // namespace

NpyArray npyOf(const HostTensor& t) {
  NpyArray a;
  a.shape = t.shape;
  a.descr = tensorDescr(t.dtype);
  if (t.dtype != DType::bf16) {
    a.data = t.bytes;
    return a;
  }
  a.data.resize(static_cast<size_t>(t.elements()) * 4);  // NumPy has no bfloat16
  for (int64_t i = 0; i < t.elements(); ++i) {
    const float f = t.at(i);
    std::memcpy(a.data.data() + i * 4, &f, 4);
  }
  return a;
}

NpyArray maskNpy(const WorkloadSpec& s, const HostInputs& in) {
  if (s.mask.kind == MaskKind::additive) return npyOf(in.additive_mask);
  NpyArray m;
  m.descr = "|b1";
  m.shape = maskShape(s);
  if (s.mask.kind == MaskKind::dense) {
    m.data = in.mask;
    return m;
  }
  const int64_t L = s.seq_q, S = s.seqKv(), planes = m.shape[0] * m.shape[1];
  m.data.resize(static_cast<size_t>(planes * L * S));
  for (int64_t i = 0; i < L; ++i)
    for (int64_t j = 0; j < S; ++j) m.data[static_cast<size_t>(i * S + j)] = maskAllows(s.mask, i, j, L, S) ? 1 : 0;
  for (int64_t p = 1; p < planes; ++p) std::memcpy(m.data.data() + p * L * S, m.data.data(), static_cast<size_t>(L * S));
  return m;
}

std::string layerFileName(int64_t layer, const std::string& name) {
  return layer == 0 ? name : "L" + std::to_string(layer + 1) + "." + name;
}

void writeRunInputs(const std::string& dir, const WorkloadSpec& s, const HostInputs& in, bool with_mask,
                    OutputUse use) {
  const auto write = [&](const char* name, const NpyArray& a) { writeNpy(fileIn(dir, name), a, use); };
  if (s.kind == WorkloadKind::layer) {
    write("x.npy", npyOf(in.x));
    for (int64_t l = 0; l < s.layers; ++l) {
      const HostInputs::WeightsOf w = in.weights(l);
      for (const auto& [name, t] : {std::pair{"w_qkv.npy", w.w_qkv}, {"b_qkv.npy", w.b_qkv}, {"w_o.npy", w.w_o},
                                    {"b_o.npy", w.b_o}})
        write(layerFileName(l, name).c_str(), npyOf(*t));
    }
  } else {
    write("q.npy", npyOf(in.q));
    write("k.npy", npyOf(in.k));
    write("v.npy", npyOf(in.v));
  }
  if (s.pass == Pass::train && in.g.elements() > 0) write("g.npy", npyOf(in.g));
  if (with_mask) write("mask.npy", maskNpy(s, in));
}

std::vector<std::string> dumpFileNames(const WorkloadSpec& s) {
  std::vector<std::string> names;
  const bool train = s.pass == Pass::train;
  if (s.kind == WorkloadKind::layer) {
    names = {"x.npy", "out.npy"};
    if (train) names.insert(names.end(), {"g.npy", "dx.npy"});
    for (int64_t l = 0; l < s.layers; ++l) {
      for (const char* n : {"w_qkv.npy", "b_qkv.npy", "w_o.npy", "b_o.npy"}) names.push_back(layerFileName(l, n));
      if (train)
        for (const char* n : {"dw_qkv.npy", "db_qkv.npy", "dw_o.npy", "db_o.npy"}) names.push_back(layerFileName(l, n));
    }
  } else {
    names = {"q.npy", "k.npy", "v.npy", "out.npy"};
    if (train) names.insert(names.end(), {"g.npy", "dq.npy", "dk.npy", "dv.npy"});
  }
  if (maskIsTensor(s.mask)) names.push_back("mask.npy");
  return names;
}

void checkDumpEntries(const std::string& dir, const WorkloadSpec& s, const std::string& db_path) {
  for (const std::string& name : dumpFileNames(s))
    checkOutput((std::filesystem::path(dir) / name).string(), db_path, OutputRule::entry);
}

void dumpRun(const std::string& dir, const WorkloadSpec& s, const HostInputs& in, const std::vector<float>& output,
             const AttentionGradients* gradients, const std::vector<LayerGradients>* layerGradients) {
  std::filesystem::create_directories(dir);
  // Float results are stored rounded to the spec's dtype, as the backend held them.
  const auto writeFloats = [&](const char* name, const std::vector<float>& values, std::vector<int64_t> shape) {
    HostTensor t = HostTensor::zeros(s.dtype, std::move(shape));
    for (int64_t i = 0; i < t.elements() && i < static_cast<int64_t>(values.size()); ++i) t.set(i, values[static_cast<size_t>(i)]);
    writeNpy(fileIn(dir, name), npyOf(t));
  };
  writeRunInputs(dir, s, in, maskIsTensor(s.mask), OutputUse::kept);
  const bool train = s.pass == Pass::train;
  if (s.kind == WorkloadKind::layer) {
    const LayerShapes z(s);
    writeFloats("out.npy", output, z.x);
    if (train && layerGradients && !layerGradients->empty() && !layerGradients->front().dx.empty()) {
      writeFloats("dx.npy", layerGradients->front().dx, z.x);
      for (size_t l = 0; l < layerGradients->size(); ++l) {
        const LayerGradients& g = (*layerGradients)[l];
        const auto at = [&](const char* n) { return layerFileName(static_cast<int64_t>(l), n); };
        writeFloats(at("dw_qkv.npy").c_str(), g.dw_qkv, z.w_qkv);
        writeFloats(at("db_qkv.npy").c_str(), g.db_qkv, z.b_qkv);
        writeFloats(at("dw_o.npy").c_str(), g.dw_o, z.w_o);
        writeFloats(at("db_o.npy").c_str(), g.db_o, z.b_o);
      }
    }
    return;
  }
  const std::vector<int64_t> qShape{s.batch, s.heads, s.seq_q, s.headDim()}, kvShape{s.batch, s.kvHeads(), s.seqKv(), s.headDim()};
  writeFloats("out.npy", output, qShape);
  if (train && gradients && !gradients->dq.empty()) {
    writeFloats("dq.npy", gradients->dq, qShape);
    writeFloats("dk.npy", gradients->dk, kvShape);
    writeFloats("dv.npy", gradients->dv, kvShape);
  }
}

HostInputs loadInputs(const std::string& dir, const WorkloadSpec& s) {
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
    const std::string path = fileIn(dir, name);
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
    for (int64_t l = 1; l < s.layers; ++l)
      in.deeper.push_back({tensor(layerFileName(l, "w_qkv.npy").c_str(), z.w_qkv),
                           tensor(layerFileName(l, "b_qkv.npy").c_str(), z.b_qkv),
                           tensor(layerFileName(l, "w_o.npy").c_str(), z.w_o),
                           tensor(layerFileName(l, "b_o.npy").c_str(), z.b_o)});
    if (s.pass == Pass::train) in.g = tensor("g.npy", z.x);
  } else {
    in.q = tensor("q.npy", {s.batch, s.heads, s.seq_q, d});
    in.k = tensor("k.npy", {s.batch, s.kvHeads(), s.seqKv(), d});
    in.v = tensor("v.npy", {s.batch, s.kvHeads(), s.seqKv(), d});
    if (s.pass == Pass::train) in.g = tensor("g.npy", {s.batch, s.heads, s.seq_q, d});
  }
  if (s.mask.kind == MaskKind::dense) {
    const std::string path = fileIn(dir, "mask.npy");
    const std::vector<int64_t> want = maskShape(s);
    NpyArray m = read(path, [&](const NpyHeader& h) {
      if (h.descr != "|b1" && h.descr != "|u1") throw NpyError(path + ": dtype " + h.descr + " is not bool (|b1)");
      if (h.shape != want)
        throw NpyError(path + ": shape " + npyShapeText(h.shape) + " does not match the spec's " + npyShapeText(want) +
                       " (mask layout " + std::string(toString(s.mask_layout)) + ")");
    });
    in.mask = std::move(m.data);
    for (auto& b : in.mask) b = b ? 1 : 0;
  }
  if (s.mask.kind == MaskKind::additive) {
    const std::string path = fileIn(dir, "mask.npy");
    const DType dt = s.maskDType();
    const std::vector<int64_t> want = additiveMaskShape(s);
    const NpyArray a = read(path, [&](const NpyHeader& h) {
      const std::string descr = tensorDescr(dt);
      if (h.descr != descr)
        throw NpyError(path + ": dtype " + h.descr + " does not match the additive mask's mask_dtype " +
                       std::string(toString(dt)) + " (expected " + descr +
                       (dt == DType::bf16 ? ", float32 holding bf16 values" : "") + ")");
      if (want != h.shape)
        throw NpyError(path + ": shape " + npyShapeText(h.shape) + " does not match the spec's " + npyShapeText(want) +
                       " (mask layout " + std::string(toString(s.mask_layout)) + ")");
    });
    in.additive_mask = npyToTensor(path, a, dt, want, true);
  }
  return in;
}

}  // namespace attnscope
