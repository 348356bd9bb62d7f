# Finds libtorch (Debian's 1.13 or any -DTorch_DIR), Gloo, CUDA/NCCL and the small libraries berth uses.
find_package(Torch REQUIRED)
find_package(nlohmann_json 3.9 REQUIRED)
find_package(Threads REQUIRED)

# Torch's exported flags carry the C++ ABI choice (-D_GLIBCXX_USE_CXX11_ABI=...); they must match.
separate_arguments(BERTH_TORCH_CXX_FLAGS UNIX_COMMAND "${TORCH_CXX_FLAGS}")

# CUDA: only when this libtorch was built with it (a pip torch's cmake prefix, say).
set(BERTH_WITH_CUDA OFF)
if(TARGET torch_cuda OR TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA)
  set(BERTH_WITH_CUDA ON)
endif()

# c10d's Gloo backend: the headers ship with libtorch; Debian keeps Gloo itself in libgloo-dev.
set(BERTH_WITH_GLOO OFF)
find_package(Gloo QUIET)
foreach(_dir ${TORCH_INCLUDE_DIRS})
  if(EXISTS "${_dir}/torch/csrc/distributed/c10d/ProcessGroupGloo.hpp")
    set(_berth_gloo_header ON)
  endif()
endforeach()
if(_berth_gloo_header AND (Gloo_FOUND OR EXISTS "${TORCH_INSTALL_PREFIX}/include/gloo/config.h" OR EXISTS "/usr/include/gloo/config.h"))
  set(BERTH_WITH_GLOO ON)
endif()

set(BERTH_WITH_NCCL OFF)
if(BERTH_WITH_CUDA)
  foreach(_dir ${TORCH_INCLUDE_DIRS})
    if(EXISTS "${_dir}/torch/csrc/distributed/c10d/ProcessGroupNCCL.hpp")
      set(BERTH_WITH_NCCL ON)
    endif()
  endforeach()
endif()

find_package(CLI11 QUIET CONFIG)
if(NOT CLI11_FOUND AND NOT EXISTS "/usr/include/CLI/CLI.hpp")
  message(FATAL_ERROR "CLI11 not found: install libcli11-dev (scripts/setup does)")
endif()

message(STATUS "berth: torch ${Torch_VERSION} cuda=${BERTH_WITH_CUDA} gloo=${BERTH_WITH_GLOO} nccl=${BERTH_WITH_NCCL}")
