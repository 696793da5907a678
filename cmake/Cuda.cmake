# ATTNSCOPE_CUDA: AUTO enables CUDA when a CUDA compiler and the toolkit are found; ON requires
# them; OFF builds the CPU-only application. Sets ATTNSCOPE_HAVE_CUDA.
set(ATTNSCOPE_HAVE_CUDA OFF)
if(NOT ATTNSCOPE_CUDA STREQUAL "OFF")
  include(CheckLanguage)
  check_language(CUDA)
  if(CMAKE_CUDA_COMPILER)
    if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
      # Small default list keeps builds quick on 2 cores; scripts/gpu-check.sh passes the GPU's arch.
      set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures")
    endif()
    # The shared runtime: executables load libcudart.so and never the driver stub.
    set(CMAKE_CUDA_RUNTIME_LIBRARY Shared)
    enable_language(CUDA)
    find_package(CUDAToolkit REQUIRED)
    set(ATTNSCOPE_HAVE_CUDA ON)
  elseif(ATTNSCOPE_CUDA STREQUAL "ON")
    message(FATAL_ERROR "ATTNSCOPE_CUDA=ON but no CUDA compiler was found (is nvcc on PATH?)")
  endif()
endif()
