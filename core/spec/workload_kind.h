#pragma once
// What a workload computes beyond its shapes:
//   kind        attention  one scaled-dot-product attention on Q, K, V (inputs [B, H, L, D])
//               layer      a multi-head attention layer on x [B, L, E]: fused QKV projection
//                          (E -> (H + 2 Hkv) D, bias), attention, merge, out projection (H D -> E, bias)
//   pass        forward    the forward only
//               train      forward, then the backward of loss = sum(O * G), G drawn from the seed;
//                          produces the gradient of every input (and weight, for layer)
//   checkpoint  none       the forward keeps what the backward reads (P for materialising backends)
//               attention  the forward keeps only the attention's inputs; the backward recomputes
//                          the attention forward first (meaningful only with pass = train)
//               layer      kind layer: each layer keeps only its input x; the backward runs the
//                          layer's forward again before its backward (torch.utils.checkpoint
//                          around the whole layer)
//   tp_comm     allreduce  tensor-parallel ranks (tp > 1) each project their own heads and sum the
//                          partial output projections with one all-reduce per layer (Megatron)
//               gather     each rank all-gathers the heads' outputs and applies the whole output
//                          projection itself
// Kept apart from workload_spec.h so kernels and views can name these without the parser.

#include <optional>
#include <string_view>

namespace attnscope {

enum class WorkloadKind { attention, layer };
enum class Pass { forward, train };
enum class Checkpoint { none, attention, layer };
enum class TpComm { allreduce, gather };

inline constexpr std::string_view kWorkloadKindChoices = "attention, layer";
inline constexpr std::string_view kPassChoices = "forward, train";
inline constexpr std::string_view kCheckpointChoices = "none, attention, layer";
inline constexpr std::string_view kTpCommChoices = "allreduce, gather";

constexpr std::string_view toString(WorkloadKind k) {
  return k == WorkloadKind::attention ? "attention" : "layer";
}
constexpr std::string_view toString(Pass p) { return p == Pass::forward ? "forward" : "train"; }
constexpr std::string_view toString(Checkpoint c) {
  return c == Checkpoint::none ? "none" : c == Checkpoint::attention ? "attention" : "layer";
}
constexpr std::string_view toString(TpComm c) { return c == TpComm::allreduce ? "allreduce" : "gather"; }

constexpr std::optional<WorkloadKind> parseWorkloadKind(std::string_view text) {
  if (text == "attention") return WorkloadKind::attention;
  if (text == "layer") return WorkloadKind::layer;
  return std::nullopt;
}
constexpr std::optional<Pass> parsePass(std::string_view text) {
  if (text == "forward") return Pass::forward;
  if (text == "train") return Pass::train;
  return std::nullopt;
}
constexpr std::optional<Checkpoint> parseCheckpoint(std::string_view text) {
  if (text == "none") return Checkpoint::none;
  if (text == "attention") return Checkpoint::attention;
  if (text == "layer") return Checkpoint::layer;
  return std::nullopt;
}
constexpr std::optional<TpComm> parseTpComm(std::string_view text) {
  if (text == "allreduce") return TpComm::allreduce;
  if (text == "gather") return TpComm::gather;
  return std::nullopt;
}

}  // namespace attnscope
