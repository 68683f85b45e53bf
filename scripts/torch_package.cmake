# Finds LibTorch for CMakeLists.txt and decides whether CUDA is compiled in.
#
# Which LibTorch: the first that applies of
#   1. -DTorch_DIR=<folder with TorchConfig.cmake>;
#   2. an entry of CMAKE_PREFIX_PATH that holds a Torch package (a LibTorch zip's root, a torch
#      wheel's folder, or torch.utils.cmake_prefix_path);
#   3. the torch wheel in DETRAIN_TORCH_VENV (default .venv/, made by scripts/setup.sh).
# Each failure is one FATAL_ERROR line that names the fix.
#
# Sets DETRAIN_WITH_CUDA (ON/OFF) and DETRAIN_TORCH_ROOT (the install prefix used).

set(DETRAIN_TORCH_VENV "${CMAKE_SOURCE_DIR}/.venv" CACHE PATH
    "virtual environment whose torch wheel is the default LibTorch (scripts/setup.sh makes it)")
set(DETRAIN_CUDA ON CACHE STRING "CUDA build: ON (LibTorch must have CUDA), AUTO or OFF")
set_property(CACHE DETRAIN_CUDA PROPERTY STRINGS ON AUTO OFF)
set(DETRAIN_MIN_TORCH 2.4)  # device-generic autocast API (at::autocast::set_autocast_enabled)

# Folder of TorchConfig.cmake inside a prefix-path entry, or "" when it holds none.
function(detrain_torch_config_in entry out_var)
  set(found "")
  foreach(candidate share/cmake/Torch Torch .)
    if(EXISTS "${entry}/${candidate}/TorchConfig.cmake")
      get_filename_component(found "${entry}/${candidate}" ABSOLUTE)
      break()
    endif()
  endforeach()
  set(${out_var} "${found}" PARENT_SCOPE)
endfunction()

# A Torch_DIR that this file chose on an earlier configure is chosen afresh, so a later
# -DCMAKE_PREFIX_PATH or a repaired venv takes effect in the same build folder.
if(Torch_DIR AND "${Torch_DIR}" STREQUAL "${DETRAIN_TORCH_DIR_CHOSEN}")
  unset(Torch_DIR CACHE)
  unset(Torch_DIR)
endif()

set(detrain_torch_config "")
if(Torch_DIR AND EXISTS "${Torch_DIR}/TorchConfig.cmake")
  get_filename_component(detrain_torch_config "${Torch_DIR}" ABSOLUTE)
  set(detrain_torch_origin "Torch_DIR")
elseif(Torch_DIR)
  message(FATAL_ERROR "detrain: Torch_DIR=${Torch_DIR} has no TorchConfig.cmake; name the folder "
                      "that holds it (<libtorch>/share/cmake/Torch) or drop -DTorch_DIR")
else()
  foreach(entry IN LISTS CMAKE_PREFIX_PATH)
    detrain_torch_config_in("${entry}" detrain_torch_config)
    if(detrain_torch_config)
      set(detrain_torch_origin "CMAKE_PREFIX_PATH entry ${entry}")
      break()
    endif()
  endforeach()
endif()

if(NOT detrain_torch_config)
  set(detrain_venv "${DETRAIN_TORCH_VENV}")
  if(NOT EXISTS "${detrain_venv}")
    message(FATAL_ERROR "detrain: no LibTorch: ${detrain_venv} does not exist; run "
                        "scripts/setup.sh (it installs the torch wheel there) or name a LibTorch "
                        "with -DCMAKE_PREFIX_PATH=<folder>")
  endif()
  file(GLOB detrain_venv_configs
       "${detrain_venv}/lib/python3*/site-packages/torch/share/cmake/Torch/TorchConfig.cmake")
  if(NOT detrain_venv_configs)
    message(FATAL_ERROR "detrain: ${detrain_venv} holds no torch package (a broken or partial "
                        "install); run scripts/setup.sh to repair it")
  endif()
  list(GET detrain_venv_configs 0 detrain_venv_config)
  get_filename_component(detrain_torch_config "${detrain_venv_config}" DIRECTORY)
  set(detrain_torch_origin "virtual environment ${detrain_venv}")
endif()

# TorchConfig looks for libtorch with find_library(... PATHS <its prefix>/lib), which CMake
# searches after the system folders: with Debian's libtorch-dev also installed it would mix that
# library with this package's headers. Putting the package's own prefix first prevents that.
get_filename_component(DETRAIN_TORCH_ROOT "${detrain_torch_config}/../../.." ABSOLUTE)
list(PREPEND CMAKE_PREFIX_PATH "${DETRAIN_TORCH_ROOT}")
# detrain has no .cu sources, so the architecture list only silences Caffe2's GPU probe (a CUDA
# compile at configure time); sm_90 is the lent H200s'.
if(NOT DEFINED TORCH_CUDA_ARCH_LIST AND NOT DEFINED ENV{TORCH_CUDA_ARCH_LIST})
  set(TORCH_CUDA_ARCH_LIST "9.0")
endif()
set(Torch_DIR "${detrain_torch_config}" CACHE PATH "folder of TorchConfig.cmake" FORCE)
if(NOT detrain_torch_origin STREQUAL "Torch_DIR")
  set(DETRAIN_TORCH_DIR_CHOSEN "${detrain_torch_config}" CACHE INTERNAL "Torch_DIR chosen here")
endif()
find_package(Torch REQUIRED CONFIG)

if(Torch_VERSION VERSION_LESS DETRAIN_MIN_TORCH)
  message(FATAL_ERROR "detrain: LibTorch ${Torch_VERSION} (${detrain_torch_origin}) is too old: "
                      "detrain needs ${DETRAIN_MIN_TORCH} or newer; run scripts/setup.sh for the "
                      "pinned wheel or point -DCMAKE_PREFIX_PATH at a newer LibTorch")
endif()
if(TORCH_INSTALL_PREFIX)
  get_filename_component(DETRAIN_TORCH_ROOT "${TORCH_INSTALL_PREFIX}" ABSOLUTE)
endif()
string(FIND "${TORCH_LIBRARY}" "${DETRAIN_TORCH_ROOT}/" detrain_torch_lib_at)
if(NOT detrain_torch_lib_at EQUAL 0)
  message(FATAL_ERROR "detrain: the Torch package in ${DETRAIN_TORCH_ROOT} resolved its library "
                      "to ${TORCH_LIBRARY}; remove the stray libtorch or pass -DTorch_DIR")
endif()
if("${TORCH_CXX_FLAGS}" MATCHES "_GLIBCXX_USE_CXX11_ABI=0")
  message(FATAL_ERROR "detrain: LibTorch at ${DETRAIN_TORCH_ROOT} uses the pre-C++11 ABI "
                      "(_GLIBCXX_USE_CXX11_ABI=0) while OpenCV, yaml-cpp and spdlog use the C++11 "
                      "ABI; use a cxx11-ABI LibTorch (every PyPI torch wheel since 2.7 is one)")
endif()

# CUDA: LibTorch says whether it was built with it; the CUDA toolkit (nvcc) must also be found.
set(DETRAIN_WITH_CUDA OFF)
set(detrain_torch_has_cuda OFF)
if(EXISTS "${DETRAIN_TORCH_ROOT}/lib/libtorch_cuda.so")
  set(detrain_torch_has_cuda ON)
endif()
if(DETRAIN_CUDA STREQUAL "ON" OR DETRAIN_CUDA STREQUAL "AUTO")
  if(TORCH_CUDA_LIBRARIES OR CAFFE2_USE_CUDA)
    set(DETRAIN_WITH_CUDA ON)
  elseif(DETRAIN_CUDA STREQUAL "ON" AND detrain_torch_has_cuda)
    message(FATAL_ERROR "detrain: DETRAIN_CUDA=ON and LibTorch has CUDA, but CMake found no CUDA "
                        "toolkit; put nvcc on PATH (or set CUDAToolkit_ROOT), or configure with "
                        "-DDETRAIN_CUDA=OFF")
  elseif(DETRAIN_CUDA STREQUAL "ON")
    message(FATAL_ERROR "detrain: DETRAIN_CUDA=ON but LibTorch ${Torch_VERSION} at "
                        "${DETRAIN_TORCH_ROOT} is a CPU-only build; install the CUDA-enabled wheel "
                        "(scripts/setup.sh) or configure with -DDETRAIN_CUDA=OFF")
  endif()
elseif(NOT DETRAIN_CUDA STREQUAL "OFF")
  message(FATAL_ERROR "detrain: DETRAIN_CUDA=${DETRAIN_CUDA}: expected ON, AUTO or OFF")
endif()
message(STATUS "detrain: LibTorch ${Torch_VERSION} from ${detrain_torch_origin} "
               "(${DETRAIN_TORCH_ROOT}), CUDA ${DETRAIN_WITH_CUDA}")
