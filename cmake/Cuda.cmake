# The optional CUDA backend: finds nvcc, enables the CUDA language and reports the result.
# RINGGRAD_CUDA=AUTO builds the backend when nvcc is found, ON requires it, OFF skips it.
# Sets RINGGRAD_CUDA_ENABLED (ON/OFF) for subdirectories and RINGGRAD_CUDA_RESULT in the
# cache (for .ci/run), plus RINGGRAD_NCCL_INCLUDE_DIR / RINGGRAD_NCCL_LIBRARY.
set(RINGGRAD_CUDA AUTO CACHE STRING "Build the CUDA backend plugin: AUTO (when nvcc is found), ON or OFF")
set_property(CACHE RINGGRAD_CUDA PROPERTY STRINGS AUTO ON OFF)

string(TOUPPER "${RINGGRAD_CUDA}" _rg_cuda_mode)
if(_rg_cuda_mode MATCHES "^(ON|YES|TRUE|Y|1)$")
  set(_rg_cuda_mode ON)
elseif(_rg_cuda_mode MATCHES "^(OFF|NO|FALSE|N|0)$")
  set(_rg_cuda_mode OFF)
elseif(NOT _rg_cuda_mode STREQUAL "AUTO")
  message(FATAL_ERROR "RINGGRAD_CUDA must be AUTO, ON or OFF, not '${RINGGRAD_CUDA}'")
endif()

# nvcc: an explicit CMAKE_CUDA_COMPILER, then $CUDACXX, then PATH, then the toolkit's
# default location (a non-login shell, as in CI, does not have /usr/local/cuda/bin on PATH).
set(_rg_nvcc "")
set(_rg_cuda_reason "")
if(_rg_cuda_mode STREQUAL "OFF")
  set(_rg_cuda_reason "RINGGRAD_CUDA=OFF")
elseif(CMAKE_CUDA_COMPILER)
  set(_rg_nvcc "${CMAKE_CUDA_COMPILER}")
elseif(NOT "$ENV{CUDACXX}" STREQUAL "")
  set(_rg_nvcc "$ENV{CUDACXX}")
else()
  find_program(_rg_nvcc_on_path nvcc NO_CACHE NO_PACKAGE_ROOT_PATH NO_CMAKE_PATH NO_CMAKE_ENVIRONMENT_PATH
               NO_CMAKE_SYSTEM_PATH NO_CMAKE_INSTALL_PREFIX)  # PATH only
  if(_rg_nvcc_on_path)
    set(_rg_nvcc "${_rg_nvcc_on_path}")
  elseif(EXISTS /usr/local/cuda/bin/nvcc)
    set(_rg_nvcc /usr/local/cuda/bin/nvcc)
  else()
    set(_rg_cuda_reason "nvcc not found: not in CUDACXX, on PATH or at /usr/local/cuda/bin/nvcc")
  endif()
endif()
if(_rg_nvcc AND NOT EXISTS "${_rg_nvcc}")
  set(_rg_cuda_reason "nvcc not found: '${_rg_nvcc}' does not exist")
  set(_rg_nvcc "")
endif()

if(_rg_cuda_mode STREQUAL "ON" AND NOT _rg_nvcc)
  message(FATAL_ERROR "RINGGRAD_CUDA=ON but the CUDA backend cannot be built: ${_rg_cuda_reason}. "
                      "Install the CUDA toolkit, set CUDACXX to nvcc, or configure with -DRINGGRAD_CUDA=AUTO or OFF.")
endif()

if(_rg_nvcc)
  set(CMAKE_CUDA_COMPILER "${_rg_nvcc}" CACHE FILEPATH "CUDA compiler")
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES AND "$ENV{CUDAARCHS}" STREQUAL "")
    set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING "CUDA architectures to build for")
  endif()
  enable_language(CUDA)
  find_package(CUDAToolkit REQUIRED)
  # CMake 3.25 knows nvcc's flags only up to C++17 (3.26 added C++20); nvcc >= 12 has it.
  if(NOT DEFINED CMAKE_CUDA20_STANDARD_COMPILE_OPTION)
    set(CMAKE_CUDA20_STANDARD_COMPILE_OPTION "-std=c++20")
    set(CMAKE_CUDA20_EXTENSION_COMPILE_OPTION "-std=c++20")
  endif()
  set(CMAKE_CUDA_STANDARD 20)
  set(CMAKE_CUDA_STANDARD_REQUIRED ON)
  set(CMAKE_CUDA_EXTENSIONS OFF)
  set(RINGGRAD_CUDA_ENABLED ON)
  string(REGEX MATCH "^[0-9]+\\.[0-9]+" _rg_nvcc_version "${CMAKE_CUDA_COMPILER_VERSION}")
  message(STATUS "CUDA backend: ON (nvcc ${_rg_nvcc_version} at ${CMAKE_CUDA_COMPILER}, "
                 "architectures ${CMAKE_CUDA_ARCHITECTURES})")
else()
  set(RINGGRAD_CUDA_ENABLED OFF)
  message(STATUS "CUDA backend: OFF (${_rg_cuda_reason})")
endif()
set(RINGGRAD_CUDA_RESULT ${RINGGRAD_CUDA_ENABLED} CACHE INTERNAL "Whether the CUDA backend is built")

# NCCL ships no CMake package: look for its header and library beside the toolkit.
set(RINGGRAD_NCCL_INCLUDE_DIR "")
set(RINGGRAD_NCCL_LIBRARY "")
if(RINGGRAD_CUDA_ENABLED)
  find_path(RINGGRAD_NCCL_INCLUDE_DIR_PATH nccl.h
            HINTS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda/include)
  find_library(RINGGRAD_NCCL_LIBRARY_PATH NAMES nccl
               HINTS ${CUDAToolkit_LIBRARY_DIR} /usr/local/cuda/lib64)
  if(NOT RINGGRAD_NCCL_INCLUDE_DIR_PATH)
    message(STATUS "NCCL: not found (no nccl.h in ${CUDAToolkit_INCLUDE_DIRS} or /usr/local/cuda/include)")
  elseif(NOT RINGGRAD_NCCL_LIBRARY_PATH)
    message(STATUS "NCCL: not found (no libnccl in ${CUDAToolkit_LIBRARY_DIR} or /usr/local/cuda/lib64)")
  else()
    set(RINGGRAD_NCCL_INCLUDE_DIR "${RINGGRAD_NCCL_INCLUDE_DIR_PATH}")
    set(RINGGRAD_NCCL_LIBRARY "${RINGGRAD_NCCL_LIBRARY_PATH}")
    message(STATUS "NCCL: found (${RINGGRAD_NCCL_LIBRARY})")
  endif()
else()
  message(STATUS "NCCL: not found (the CUDA backend is OFF)")
endif()
