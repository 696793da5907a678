# Sourced by the scripts: puts a CUDA toolkit in its usual place on PATH so CMake finds nvcc.
if [ -x /usr/local/cuda/bin/nvcc ] && ! command -v nvcc >/dev/null 2>&1; then
  export PATH="/usr/local/cuda/bin:$PATH"
fi
JOBS=${JOBS:-$(nproc)}
