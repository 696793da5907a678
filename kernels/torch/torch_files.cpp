#include "kernels/torch/torch_files.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>
#include <unistd.h>
#include <utility>

#include "core/mask.h"
#include "core/npy.h"

namespace attnscope::torch {
namespace {

NpyArray tensorFile(const HostTensor& t) {
  NpyArray a;
  a.shape = t.shape;
  if (t.dtype == DType::fp16) {
    a.descr = "<f2";
    a.data = t.bytes;
  } else if (t.dtype == DType::fp32) {
    a.descr = "<f4";
    a.data = t.bytes;
  } else {  // bf16: NumPy has none, so float32 holding the exact bf16 values; the worker rounds back exactly
    a.descr = "<f4";
    a.data.resize(static_cast<size_t>(t.elements()) * 4);
    for (int64_t i = 0; i < t.elements(); ++i) {
      const float f = t.at(i);
      std::memcpy(a.data.data() + i * 4, &f, 4);
    }
  }
  return a;
}

}  // namespace

std::string maskPassing(const WorkloadSpec& spec) {
  switch (spec.mask.kind) {
    case MaskKind::none: return "none";
    case MaskKind::causal: return "causal";
    default: return "tensor";
  }
}

std::string maskPassingNote() {
  return "torch.* backends pass masks as: causal -> is_causal=True (causal_lower_right when Lq != Lkv, torch >= 2.3; "
         "a boolean tensor before); dense -> boolean tensor in the spec's layout ([1,1,L,S] or [B,H,L,S]); "
         "window, block -> boolean tensors; GQA -> enable_gqa=True (torch >= 2.5; K/V repeated before)";
}

RunFolder::RunFolder() {
  const char* tmp = std::getenv("TMPDIR");
  std::string templ = std::string(tmp && *tmp ? tmp : "/tmp") + "/attnscope-torch-XXXXXX";
  std::vector<char> buf(templ.begin(), templ.end());
  buf.push_back('\0');
  if (!::mkdtemp(buf.data())) throw std::runtime_error("cannot create a temporary folder for torch inputs in " + templ);
  path_ = buf.data();
}

RunFolder::~RunFolder() {
  std::error_code ec;
  std::filesystem::remove_all(path_, ec);
}

void writeTorchInputs(const RunFolder& dir, const WorkloadSpec& s, const HostInputs& in) {
  if (s.kind == WorkloadKind::layer) {
    for (const auto& [name, t] : {std::pair{"x.npy", &in.x}, {"w_qkv.npy", &in.w_qkv}, {"b_qkv.npy", &in.b_qkv},
                                  {"w_o.npy", &in.w_o}, {"b_o.npy", &in.b_o}})
      writeNpy(dir.file(name), tensorFile(*t));
  } else {
    writeNpy(dir.file("q.npy"), tensorFile(in.q));
    writeNpy(dir.file("k.npy"), tensorFile(in.k));
    writeNpy(dir.file("v.npy"), tensorFile(in.v));
  }
  if (s.pass == Pass::train) writeNpy(dir.file("g.npy"), tensorFile(in.g));
  const bool lowerRightCausal = s.mask.kind == MaskKind::causal && s.seq_q != s.seqKv();
  if (maskPassing(s) != "tensor" && !lowerRightCausal) return;
  // A causal mask with Lq != Lkv is written too: torch < 2.3 has no causal_lower_right.
  const bool perHead = s.mask_layout == MaskLayout::per_head && s.mask.kind != MaskKind::causal;
  NpyArray m;
  m.descr = "|b1";
  m.shape = perHead ? std::vector<int64_t>{s.batch, s.heads, s.seq_q, s.seqKv()}
                    : std::vector<int64_t>{1, 1, s.seq_q, s.seqKv()};
  if (s.mask.kind == MaskKind::dense) {
    m.data = in.mask;
  } else {
    const int64_t L = s.seq_q, S = s.seqKv(), planes = perHead ? s.batch * s.heads : 1;
    m.data.resize(static_cast<size_t>(planes * L * S));
    for (int64_t i = 0; i < L; ++i)
      for (int64_t j = 0; j < S; ++j) m.data[static_cast<size_t>(i * S + j)] = maskAllows(s.mask, i, j, L, S) ? 1 : 0;
    for (int64_t p = 1; p < planes; ++p)
      std::memcpy(m.data.data() + p * L * S, m.data.data(), static_cast<size_t>(L * S));
  }
  writeNpy(dir.file("mask.npy"), m);
}

std::vector<float> readTorchOutput(const std::string& path, const WorkloadSpec& s) {
  if (s.kind == WorkloadKind::layer) return readTorchTensor(path, {s.batch, s.seq_q, layerWidth(s)});
  return readTorchTensor(path, {s.batch, s.heads, s.seq_q, s.headDim()});
}

std::vector<float> readTorchTensor(const std::string& path, const std::vector<int64_t>& want) {
  NpyArray a = readNpy(path);
  if (a.descr != "<f4" || a.shape != want)
    throw std::runtime_error("the torch worker's " + path + " is not float32 of the shape the spec says");
  std::vector<float> out(a.data.size() / 4);
  std::memcpy(out.data(), a.data.data(), out.size() * 4);
  return out;
}

HostTensor readTorchTensor(const std::string& path, const std::vector<int64_t>& shape, DType dtype) {
  const std::vector<float> values = readTorchTensor(path, shape);
  HostTensor t = HostTensor::zeros(dtype, shape);
  for (int64_t i = 0; i < t.elements(); ++i) t.set(i, values[static_cast<size_t>(i)]);
  return t;
}

}  // namespace attnscope::torch
