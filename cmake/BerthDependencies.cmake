# Finds torch 2.x (the PyPI wheel's cmake prefix, which scripts/build passes, or any -DTorch_DIR), Gloo's headers,
# CUDA/NCCL and the small libraries berth uses.
# berth compiles no CUDA kernels of its own: a fixed architecture list keeps torch's CMake from probing for GPUs
# (its probe on a GPU-less machine lists architectures its own arch-flag function then rejects).
if(NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(ENV{TORCH_CUDA_ARCH_LIST} "9.0")
endif()
# pip install . / pip wheel . (scikit-build-core, --no-build-isolation): the torch of the Python that builds.
if(SKBUILD AND Python_EXECUTABLE AND NOT Torch_DIR)
  execute_process(COMMAND ${Python_EXECUTABLE} -c "import torch.utils; print(torch.utils.cmake_prefix_path)"
                  OUTPUT_VARIABLE _berth_torch_prefix OUTPUT_STRIP_TRAILING_WHITESPACE)
  list(APPEND CMAKE_PREFIX_PATH ${_berth_torch_prefix})
  set(BERTH_PYTHON ${Python_EXECUTABLE} CACHE FILEPATH "")
  # scripts/setup's venv holds nvcc and the CUDA headers of torch's CUDA (scripts/build passes the same).
  execute_process(COMMAND ${Python_EXECUTABLE} -c "import sys; print(sys.prefix)"
                  OUTPUT_VARIABLE _berth_venv OUTPUT_STRIP_TRAILING_WHITESPACE)
  if(EXISTS ${_berth_venv}/cuda/bin/nvcc)
    set(CUDAToolkit_ROOT ${_berth_venv}/cuda CACHE PATH "")
    set(CUDA_TOOLKIT_ROOT_DIR ${_berth_venv}/cuda CACHE PATH "")
    set(CMAKE_CUDA_COMPILER ${_berth_venv}/cuda/bin/nvcc CACHE FILEPATH "")
  endif()
endif()
find_package(Torch REQUIRED)
if(Torch_VERSION VERSION_LESS 2.4)
  message(FATAL_ERROR "berth needs torch 2.4 or later, found ${Torch_VERSION} (${Torch_DIR}). "
    "Fix: run scripts/setup and scripts/build (they use the pinned torch of scripts/requirements.txt)")
endif()
find_package(nlohmann_json 3.9 REQUIRED)
find_package(Threads REQUIRED)

# A PyPI torch's libraries are in its package folder, off the loader's path: berth's libraries and programs, and
# programs that link berth, find them through an rpath.
set(BERTH_TORCH_LIB_DIR "${TORCH_INSTALL_PREFIX}/lib")

# Torch's exported flags carry the C++ ABI choice (-D_GLIBCXX_USE_CXX11_ABI=...); they must match.
separate_arguments(BERTH_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")

# CUDA: whenever this torch was built with it (the PyPI wheel is), whether or not the machine has a GPU.
set(BERTH_WITH_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA)
  set(BERTH_WITH_CUDA ON)
endif()

# c10d's Gloo backend is compiled into libtorch_cpu, but the wheel leaves out the gloo/ headers its
# ProcessGroupGloo.hpp includes: Debian's libgloo-dev supplies them. Only the headers: linking Debian's libgloo
# as well would put a second Gloo beside torch's.
set(BERTH_WITH_GLOO OFF)
find_path(BERTH_GLOO_INCLUDE_DIR gloo/config.h HINTS ${TORCH_INCLUDE_DIRS})
foreach(_dir ${TORCH_INCLUDE_DIRS})
  if(EXISTS "${_dir}/torch/csrc/distributed/c10d/ProcessGroupGloo.hpp")
    set(_berth_gloo_header ON)
  endif()
endforeach()
if(_berth_gloo_header AND BERTH_GLOO_INCLUDE_DIR)
  set(BERTH_WITH_GLOO ON)
endif()

# NCCL: ProcessGroupNCCL.hpp includes <nccl.h>, which the wheel's nvidia-nccl package (beside torch) or a system
# NCCL provides.
set(BERTH_WITH_NCCL OFF)
if(BERTH_WITH_CUDA)
  find_path(BERTH_NCCL_INCLUDE_DIR nccl.h
    HINTS ${TORCH_INSTALL_PREFIX}/../nvidia/nccl/include $ENV{NCCL_HOME}/include ${CUDAToolkit_INCLUDE_DIRS})
  foreach(_dir ${TORCH_INCLUDE_DIRS})
    if(EXISTS "${_dir}/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp" AND BERTH_NCCL_INCLUDE_DIR)
      set(BERTH_WITH_NCCL ON)
    endif()
  endforeach()
endif()

# The Python that computes the goldens: the virtual environment's (scripts/build passes it), with torch and the
# real HF and DeepSpeed libraries.
set(BERTH_PYTHON "" CACHE FILEPATH "Python with torch, transformers, tokenizers, safetensors and deepspeed")
if(NOT BERTH_PYTHON)
  find_program(BERTH_PYTHON python3)
endif()

find_package(CLI11 QUIET CONFIG)
if(NOT CLI11_FOUND AND NOT EXISTS "/usr/include/CLI/CLI.hpp")
  message(FATAL_ERROR "CLI11 not found: install libcli11-dev (scripts/setup does)")
endif()

message(STATUS "berth: torch ${Torch_VERSION} cuda=${BERTH_WITH_CUDA} gloo=${BERTH_WITH_GLOO} nccl=${BERTH_WITH_NCCL}")
