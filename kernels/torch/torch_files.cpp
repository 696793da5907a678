#include "kernels/torch/torch_files.h"

#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <stdexcept>

#include "core/inputs/npy.h"
#include "core/inputs/run_files.h"

namespace attnscope::torch {

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
         "additive -> float tensor of mask_dtype in the same layouts; window, block -> boolean tensors; GQA -> enable_gqa=True (torch >= 2.5; K/V repeated before)";
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
  // A causal mask with Lq != Lkv is written too: torch < 2.3 has no causal_lower_right.
  const bool lowerRightCausal = s.mask.kind == MaskKind::causal && s.seq_q != s.seqKv();
  // A private folder removed after the run: nothing to flush to the disk.
  writeRunInputs(dir.path(), s, in, maskPassing(s) == "tensor" || lowerRightCausal, OutputUse::scratch);
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

LayerGradients readTorchLayerGradients(const RunFolder& dir, const WorkloadSpec& s, int64_t layer, bool with_dx) {
  const int64_t e = layerWidth(s), rows = layerQkvRows(s);
  const auto file = [&](const char* name) { return dir.path() + "/" + layerFileName(layer, name); };
  LayerGradients g;
  if (with_dx) g.dx = readTorchTensor(file("dx.npy"), {s.batch, s.seq_q, e});
  g.dw_qkv = readTorchTensor(file("dw_qkv.npy"), {rows, e});
  g.db_qkv = readTorchTensor(file("db_qkv.npy"), {rows});
  g.dw_o = readTorchTensor(file("dw_o.npy"), {e, s.heads * s.headDim()});
  g.db_o = readTorchTensor(file("db_o.npy"), {e});
  return g;
}

LayerIntermediates readTorchLayerIntermediates(const RunFolder& dir, const WorkloadSpec& s, int64_t layer) {
  const std::vector<int64_t> qs{s.batch, s.heads, s.seq_q, s.headDim()};
  const std::vector<int64_t> kvs{s.batch, s.kvHeads(), s.seq_q, s.headDim()};
  const auto read = [&](const char* name, const std::vector<int64_t>& shape) {
    return readTorchTensor(dir.path() + "/" + layerFileName(layer, name), shape, s.dtype);
  };
  LayerIntermediates out;
  if (layer > 0) out.x = read("mid_x.npy", {s.batch, s.seq_q, layerWidth(s)});
  out.q = read("mid_q.npy", qs);
  out.k = read("mid_k.npy", kvs);
  out.v = read("mid_v.npy", kvs);
  out.o = read("mid_o.npy", qs);
  if (s.pass == Pass::train) {
    out.d_o = read("mid_d_o.npy", qs);
    out.dq = read("mid_dq.npy", qs);
    out.dk = read("mid_dk.npy", kvs);
    out.dv = read("mid_dv.npy", kvs);
  }
  return out;
}

}  // namespace attnscope::torch
