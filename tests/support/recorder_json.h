#pragma once
// The recorder's JSON (python/attnscope_record.py) written by hand, for the tests of recordings
// that need no torch: a tensor's layout, one call signature, a bool mask, the whole file.

#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

namespace attnscope::test {

inline nlohmann::json recordedTensor(std::vector<int64_t> shape, const std::string& dtype = "float16",
                                     const std::string& device = "cpu") {
  std::vector<int64_t> stride(shape.size(), 1);
  for (size_t i = shape.size(); i-- > 1;) stride[i - 1] = stride[i] * shape[i];
  return {{"shape", shape}, {"stride", stride}, {"offset", 0}, {"dtype", dtype}, {"device", device}, {"contiguous", true}};
}

// One signature: q [1, heads, seq, d], k/v with kv_heads (0: heads), three calls of 10 ms.
inline nlohmann::json recordedCall(int64_t heads, int64_t seq, int64_t d, nlohmann::json mask, const std::string& ran = "flash",
                                   int64_t kv_heads = 0, int64_t bytes_max = 1200) {
  const int64_t hkv = kv_heads ? kv_heads : heads;
  return {{"op", "scaled_dot_product_attention"},
          {"site", "model.py:" + std::to_string(10 + heads)},
          {"module", "Model.attn"},
          {"q", recordedTensor({1, heads, seq, d})},
          {"k", recordedTensor({1, hkv, seq, d})},
          {"v", recordedTensor({1, hkv, seq, d})},
          {"mask", mask},
          {"is_causal", false},
          {"dropout_p", 0.0},
          {"scale", nullptr},
          {"enable_gqa", hkv != heads},
          {"requires_grad", false},
          {"fused_choice", ran},
          {"aten_ops", {"_scaled_dot_product_flash_attention_for_cpu"}},
          {"ran", ran},
          {"notes", nlohmann::json::array()},
          {"count", 3},
          {"time_total_s", 0.03},
          {"time_min_s", 0.009},
          {"time_max_s", 0.011},
          {"memory_method", "profiler"},
          {"memory_measured", 3},
          {"bytes_min", bytes_max / 2},
          {"bytes_max", bytes_max},
          {"backward", nullptr},
          {"samples", nlohmann::json::array()}};
}

inline nlohmann::json recordedBoolMask(std::vector<int64_t> shape) {
  return {{"kind", "bool"}, {"shape", shape}, {"stride", nlohmann::json::array()}, {"broadcast", shape[0] == 1},
          {"materialised", shape[0] != 1}};
}

inline nlohmann::json recorderFile(nlohmann::json calls, const std::string& torch = "2.15.0+cpu", int64_t calls_seen = 6) {
  return {{"format", 1},          {"complete", true},      {"error", ""},
          {"python", "3.11.7"},   {"executable", "/x/python"}, {"torch", torch},
          {"torch_cuda", ""},     {"torch_cudnn", ""},     {"cuda_available", false},
          {"cuda_devices", nlohmann::json::array()}, {"threads", 2}, {"started_unix_ms", 1},
          {"updated_unix_ms", 2}, {"calls_seen", calls_seen}, {"calls_dropped", 0},
          {"overhead_s", 0.001},  {"calls", calls}};
}

}  // namespace attnscope::test
