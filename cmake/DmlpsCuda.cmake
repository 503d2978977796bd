# Decides whether the CUDA backend is built, and sets CUDA up when it is.
#
# DMLPS_WITH_CUDA is AUTO (the default), ON or OFF. AUTO builds the backend
# when check_language(CUDA) finds a CUDA compiler (nvcc on PATH, CUDACXX, or
# /usr/local/cuda/bin/nvcc) and cuBLAS, and quietly skips it otherwise; ON
# fails the configure when they are missing; OFF never looks.
#
# Without CMAKE_CUDA_ARCHITECTURES given, the code is compiled for one real
# architecture (sm_90: H100, H200) plus PTX for compute_80, which the driver
# compiles on first use for any newer GPU (A100, L4, ...). Two targets keep
# the compile short on CI machines; pass -DCMAKE_CUDA_ARCHITECTURES=native
# (or a list) to build for the GPUs at hand.
#
# Sets DMLPS_HAVE_CUDA to ON or OFF.

set(DMLPS_HAVE_CUDA OFF)
string(TOUPPER "${DMLPS_WITH_CUDA}" _dmlps_cuda_mode)
if(_dmlps_cuda_mode STREQUAL "OFF" OR _dmlps_cuda_mode STREQUAL "NO" OR
   _dmlps_cuda_mode STREQUAL "FALSE" OR _dmlps_cuda_mode STREQUAL "0")
  message(STATUS "CUDA backend: off (DMLPS_WITH_CUDA=${DMLPS_WITH_CUDA})")
  return()
endif()
set(_dmlps_cuda_required OFF)
if(NOT _dmlps_cuda_mode STREQUAL "AUTO")
  set(_dmlps_cuda_required ON)
endif()

if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX} AND EXISTS /usr/local/cuda/bin/nvcc)
  find_program(_dmlps_nvcc_on_path nvcc)
  if(NOT _dmlps_nvcc_on_path)
    set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH "CUDA compiler")
  endif()
endif()

include(CheckLanguage)
check_language(CUDA)
if(NOT CMAKE_CUDA_COMPILER)
  if(_dmlps_cuda_required)
    message(FATAL_ERROR "DMLPS_WITH_CUDA=${DMLPS_WITH_CUDA}: no CUDA compiler found; install "
                        "the CUDA toolkit, put nvcc on PATH or set CUDACXX, or configure with "
                        "-DDMLPS_WITH_CUDA=OFF")
  endif()
  message(STATUS "CUDA backend: off (no CUDA compiler found)")
  return()
endif()

if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES OR CMAKE_CUDA_ARCHITECTURES STREQUAL "")
  set(CMAKE_CUDA_ARCHITECTURES "90-real;80-virtual" CACHE STRING "CUDA architectures" FORCE)
endif()
set(CMAKE_CUDA_STANDARD 17)
set(CMAKE_CUDA_STANDARD_REQUIRED ON)
if(CMAKE_CXX_COMPILER_LAUNCHER AND NOT CMAKE_CUDA_COMPILER_LAUNCHER)
  set(CMAKE_CUDA_COMPILER_LAUNCHER "${CMAKE_CXX_COMPILER_LAUNCHER}")
endif()
enable_language(CUDA)
find_package(CUDAToolkit)
if(NOT TARGET CUDA::cublas OR NOT TARGET CUDA::cudart_static)
  if(_dmlps_cuda_required)
    message(FATAL_ERROR "DMLPS_WITH_CUDA=${DMLPS_WITH_CUDA}: the CUDA toolkit has no cuBLAS")
  endif()
  message(STATUS "CUDA backend: off (cuBLAS not found)")
  return()
endif()
# Installed binaries find libcublas where the build found it.
set(CMAKE_INSTALL_RPATH_USE_LINK_PATH ON)
set(DMLPS_HAVE_CUDA ON)
message(STATUS "CUDA backend: on (nvcc ${CMAKE_CUDA_COMPILER_VERSION}, architectures "
               "${CMAKE_CUDA_ARCHITECTURES})")
