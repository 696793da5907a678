#pragma once
// The single-precision matrix product bench_cpu compares our tile kernels with, row-major, in
// the shape of cblas_sgemm: C = alpha * A * op(B) + beta * C, where A is M x K and op(B) is K x N
// (B is stored N x K when transpose_b). OpenBLAS when the build found it, else a plain C++ loop
// nest. The backends do not use it (tile_kernels.h).

#include <string>

namespace attnscope::cpu {

void sgemm(bool transpose_b, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
           float beta, float* c, int ldc);

// Threads the BLAS itself may use inside one sgemm call. The backends call it with 1 because they
// parallelise over their own tasks; bench_cpu raises it to measure the machine's GEMM rate.
void setBlasThreads(int threads);

// E.g. "OpenBLAS 0.3.21 (Haswell kernels, DYNAMIC_ARCH ...)" or "none (plain C++ loops)".
std::string blasDescription();

}  // namespace attnscope::cpu
