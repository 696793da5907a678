#include "kernels/cuda/cuda_stream.h"

#include <stdexcept>
#include <string>

#include <cstring>
#include <vector>

#include "kernels/cuda/cuda_check.h"

namespace attnscope::cuda {

CudaStream::CudaStream() {
  ATTNSCOPE_CUDA_CHECK(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
  try {
    ATTNSCOPE_CUDA_CHECK(cudaEventCreate(&start_));
    ATTNSCOPE_CUDA_CHECK(cudaEventCreate(&stop_));
  } catch (...) {
    if (start_) cudaEventDestroy(start_);
    cudaStreamDestroy(stream_);
    throw;
  }
}

CudaStream::~CudaStream() {
  // Errors here mean the context is already lost; nothing useful can be done with them.
  cudaEventDestroy(stop_);
  cudaEventDestroy(start_);
  cudaStreamDestroy(stream_);
  (void)cudaGetLastError();
}

void CudaStream::startTimer() { ATTNSCOPE_CUDA_CHECK(cudaEventRecord(start_, stream_)); }

double CudaStream::stopTimer() {
  ATTNSCOPE_CUDA_CHECK(cudaEventRecord(stop_, stream_));
  ATTNSCOPE_CUDA_CHECK(cudaEventSynchronize(stop_));
  float ms = 0.f;
  ATTNSCOPE_CUDA_CHECK(cudaEventElapsedTime(&ms, start_, stop_));
  return static_cast<double>(ms) * 1e-3;
}

void CudaStream::synchronize() { ATTNSCOPE_CUDA_CHECK(cudaStreamSynchronize(stream_)); }

Buffer<uint8_t> uploadTensor(TrackingAllocator& alloc, const void* data, int64_t bytes, const char* tag,
                             CudaStream& stream) {
  Buffer<uint8_t> buf(alloc, bytes, tag);
  if (bytes > 0) {
    ATTNSCOPE_CUDA_CHECK(
        cudaMemcpyAsync(buf.data(), data, static_cast<size_t>(bytes), cudaMemcpyHostToDevice, stream.get()));
    stream.synchronize();
  }
  return buf;
}

DeviceInputs uploadInputs(TrackingAllocator& alloc, const HostInputs& in, int64_t q_bytes, int64_t k_bytes,
                          int64_t v_bytes, int64_t mask_bytes, CudaStream& stream) {
  auto check = [](const char* name, size_t have, int64_t want) {
    if (static_cast<int64_t>(have) != want)
      throw std::invalid_argument(std::string(name) + " has " + std::to_string(have) + " bytes, the spec needs " +
                                  std::to_string(want));
  };
  check("q", in.q.bytes.size(), q_bytes);
  check("k", in.k.bytes.size(), k_bytes);
  check("v", in.v.bytes.size(), v_bytes);
  DeviceInputs d;
  d.q = uploadTensor(alloc, in.q.data(), q_bytes, "q", stream);
  d.k = uploadTensor(alloc, in.k.data(), k_bytes, "k", stream);
  d.v = uploadTensor(alloc, in.v.data(), v_bytes, "v", stream);
  if (mask_bytes > 0) {
    if (static_cast<int64_t>(in.mask.size()) != mask_bytes)
      throw std::invalid_argument("dense mask has " + std::to_string(in.mask.size()) + " bytes, expected " +
                                  std::to_string(mask_bytes));
    d.mask = uploadTensor(alloc, in.mask.data(), mask_bytes, "mask", stream);
  }
  return d;
}

DeviceGradients allocateGradients(TrackingAllocator& alloc, const WorkloadSpec& spec, const HostInputs& in,
                                  CudaStream& stream) {
  const int64_t eb = bytesPerElement(spec.dtype);
  const int64_t q_bytes = spec.qElements() * eb, kv_bytes = spec.kvElements() * eb;
  if (in.g.bytes.empty()) throw std::invalid_argument("a train pass needs the output gradient g in the inputs");
  if (in.g.dtype != spec.dtype || static_cast<int64_t>(in.g.bytes.size()) != q_bytes)
    throw std::invalid_argument("g has " + std::to_string(in.g.bytes.size()) + " bytes of " +
                                std::string(toString(in.g.dtype)) + ", the spec needs " + std::to_string(q_bytes) +
                                " of " + std::string(toString(spec.dtype)));
  DeviceGradients d;
  d.g = uploadTensor(alloc, in.g.data(), q_bytes, "g", stream);
  d.dq = Buffer<uint8_t>(alloc, q_bytes, "dq");
  d.dk = Buffer<uint8_t>(alloc, kv_bytes, "dk");
  d.dv = Buffer<uint8_t>(alloc, kv_bytes, "dv");
  return d;
}

bool downloadGradients(const WorkloadSpec& spec, const DeviceGradients& d, AttentionGradients& out,
                       CudaStream& stream) {
  if (!d.dq) return false;
  downloadAsFloat(d.dq.data(), spec.qElements(), spec.dtype, out.dq, stream);
  downloadAsFloat(d.dk.data(), spec.kvElements(), spec.dtype, out.dk, stream);
  downloadAsFloat(d.dv.data(), spec.kvElements(), spec.dtype, out.dv, stream);
  return true;
}

void downloadAsFloat(const void* device_data, int64_t elements, DType dtype, std::vector<float>& out,
                     CudaStream& stream) {
  const int64_t eb = bytesPerElement(dtype);
  std::vector<uint8_t> raw(static_cast<size_t>(elements * eb));
  if (elements > 0) {
    ATTNSCOPE_CUDA_CHECK(cudaMemcpyAsync(raw.data(), device_data, raw.size(), cudaMemcpyDeviceToHost, stream.get()));
    stream.synchronize();
  }
  out.resize(static_cast<size_t>(elements));
  for (int64_t i = 0; i < elements; ++i) {
    if (dtype == DType::fp32) {
      std::memcpy(&out[i], raw.data() + i * 4, 4);
    } else {
      uint16_t h;
      std::memcpy(&h, raw.data() + i * 2, 2);
      out[i] = dtype == DType::fp16 ? halfToFloat(h) : bf16ToFloat(h);
    }
  }
}

}  // namespace attnscope::cuda
