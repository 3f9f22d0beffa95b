# Decides whether the runtime's CUDA backend (MPRuntimeCUDA) is built, and
# enables the CUDA language when it is. Included at file scope by the main
# CMakeLists.txt and by lib/Runtime/CMakeLists.txt when the runtime is built
# alone (enable_language must run in the top directory of the targets that
# link CUDA code).
#
#   MP_ENABLE_CUDA            AUTO (default): build it when nvcc, cuBLASLt and
#                             cuDNN are found, else build without it (with a
#                             status message); ON: the same, with a warning
#                             when something is missing (ON was the default
#                             of an older boolean option, so build trees may
#                             have it cached); REQUIRED: an error when
#                             something is missing; OFF: never.
#   CMAKE_CUDA_ARCHITECTURES  default "80;90" (CUDA 13 has no sm_70; "native"
#                             fails where there is no GPU).
#
# Sets MP_HAVE_CUDA_BACKEND (ON/OFF), MP_CUDNN_LIBRARY, MP_CUDNN_INCLUDE_DIR.
# Sanitizer and fuzzer builds never build CUDA code (nvcc does not take
# their flags, and they run on machines without GPUs).
include_guard(GLOBAL)

set(MP_ENABLE_CUDA AUTO CACHE STRING
    "Build the runtime's CUDA backend: AUTO or ON (when the CUDA toolkit, cuBLASLt and cuDNN are found; ON warns when not), REQUIRED, or OFF")
set_property(CACHE MP_ENABLE_CUDA PROPERTY STRINGS AUTO ON REQUIRED OFF)
set(MP_HAVE_CUDA_BACKEND OFF)
string(TOUPPER "${MP_ENABLE_CUDA}" _mp_cuda_mode)
if(_mp_cuda_mode MATCHES "^(OFF|FALSE|NO|0|N)$")
  message(STATUS "MixPrec CUDA backend: off (MP_ENABLE_CUDA=${MP_ENABLE_CUDA})")
elseif(MP_SANITIZERS OR MP_BUILD_FUZZERS)
  message(STATUS "MixPrec CUDA backend: off (sanitizer and fuzzer builds do "
                 "not build CUDA code)")
else()
  set(_mp_cuda_required OFF)
  if(_mp_cuda_mode STREQUAL "REQUIRED")
    set(_mp_cuda_required ON)
  endif()
  if(NOT DEFINED CMAKE_CUDA_ARCHITECTURES)
    set(CMAKE_CUDA_ARCHITECTURES "80;90" CACHE STRING
        "GPU architectures of the CUDA backend")
  endif()
  # The CUDA toolkit's usual place when nvcc is not on PATH.
  if(NOT CMAKE_CUDA_COMPILER AND NOT DEFINED ENV{CUDACXX}
     AND EXISTS /usr/local/cuda/bin/nvcc)
    find_program(_mp_nvcc nvcc)
    if(NOT _mp_nvcc)
      set(CMAKE_CUDA_COMPILER /usr/local/cuda/bin/nvcc CACHE FILEPATH
          "The CUDA compiler")
    endif()
  endif()
  include(CheckLanguage)
  check_language(CUDA)
  set(_mp_cuda_missing "")
  if(CMAKE_CUDA_COMPILER)
    if(NOT CUDAToolkit_ROOT AND NOT DEFINED ENV{CUDAToolkit_ROOT})
      # The toolkit of the compiler that check_language found.
      get_filename_component(_mp_cuda_bin "${CMAKE_CUDA_COMPILER}" DIRECTORY)
      get_filename_component(CUDAToolkit_ROOT "${_mp_cuda_bin}" DIRECTORY)
    endif()
    find_package(CUDAToolkit QUIET)
    if(CUDAToolkit_FOUND AND TARGET CUDA::cublasLt AND TARGET CUDA::cudart)
      # libcudnn.so.9 alone (no unversioned link) is what the pip wheels
      # (nvidia-cudnn-cu*) and runtime-only packages install.
      find_library(MP_CUDNN_LIBRARY NAMES cudnn libcudnn.so.9
                   HINTS ${CUDAToolkit_LIBRARY_DIR}
                   DOC "cuDNN (libcudnn)")
      find_path(MP_CUDNN_INCLUDE_DIR cudnn.h HINTS ${CUDAToolkit_INCLUDE_DIRS}
                DOC "Directory with cudnn.h")
      if(NOT MP_CUDNN_LIBRARY OR NOT MP_CUDNN_INCLUDE_DIR)
        set(_mp_cuda_missing "cuDNN (libcudnn, cudnn.h)")
      endif()
    else()
      set(_mp_cuda_missing "the CUDA toolkit's cudart / cuBLASLt")
    endif()
  else()
    set(_mp_cuda_missing "a working CUDA compiler (nvcc)")
  endif()
  if(_mp_cuda_missing STREQUAL "")
    if(MP_CCACHE AND NOT CMAKE_CUDA_COMPILER_LAUNCHER)
      set(CMAKE_CUDA_COMPILER_LAUNCHER ${MP_CCACHE})
    endif()
    enable_language(CUDA)
    set(MP_HAVE_CUDA_BACKEND ON)
    message(STATUS "MixPrec CUDA backend: on (CUDA ${CUDAToolkit_VERSION}, "
                   "architectures ${CMAKE_CUDA_ARCHITECTURES}, cuDNN "
                   "${MP_CUDNN_LIBRARY})")
  elseif(_mp_cuda_required)
    message(FATAL_ERROR "MP_ENABLE_CUDA=${MP_ENABLE_CUDA} but ${_mp_cuda_missing} "
      "was not found; install it, point CMAKE_CUDA_COMPILER / CUDAToolkit_ROOT "
      "at it, or configure with -DMP_ENABLE_CUDA=AUTO or OFF")
  elseif(NOT _mp_cuda_mode STREQUAL "AUTO")
    message(WARNING "MixPrec CUDA backend: off (${_mp_cuda_missing} not found; "
                    "building without it; MP_ENABLE_CUDA=REQUIRED makes this "
                    "an error)")
  else()
    message(STATUS "MixPrec CUDA backend: off (${_mp_cuda_missing} not found; "
                   "building without it)")
  endif()
endif()
