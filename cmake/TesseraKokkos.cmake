# Finds Kokkos and leaves a usable `Kokkos::kokkos` target behind.
#
# Supported:
#  * Kokkos 4.x installs (its own CMake package; nothing to fix), and
#  * Debian's libtrilinos-kokkos-dev (Kokkos 3.4.01 built by TriBITS, Serial only), whose
#    `Kokkos::kokkos` imported target points at <prefix>/include instead of
#    <prefix>/include/trilinos. Its `KokkosCore_INCLUDE_DIRS` variable is right, so the
#    target's include path is replaced with it.
#
# Sets TESSERA_KOKKOS_VERSION (e.g. 3.4.01) and TESSERA_KOKKOS_DEVICES (upper case list).
# Used both by Tessera's own build and by the installed TesseraConfig.cmake. On failure it sets
# TESSERA_KOKKOS_ERROR (and returns) instead of stopping, so that a QUIET find_package(Tessera)
# can report "not found"; Tessera's own build turns the message into a fatal error.

set(TESSERA_KOKKOS_MIN_VERSION 3.4)
# The Kokkos execution spaces with a Tessera backend (backends/<name>/; the C++ list is
# TESSERA_BACKEND_NAMES in dsl/config.hpp, checked against this one by test_headers), and those
# whose memory is a device's (their tests cannot run on the build machine).
set(TESSERA_BACKENDS Serial OpenMP Cuda HIP)
set(TESSERA_DEVICE_BACKENDS Cuda HIP)
set(TESSERA_KOKKOS_ERROR "")
if(NOT TARGET Kokkos::kokkos)
  if(Tessera_FIND_QUIETLY)
    find_package(Kokkos QUIET)
  else()
    find_package(Kokkos)
  endif()
endif()
if(NOT TARGET Kokkos::kokkos)
  set(TESSERA_KOKKOS_ERROR
    "Tessera needs Kokkos (3.4 or 4.x) and none was found.\n"
    "  On Debian/Ubuntu:  sudo apt-get install libtrilinos-kokkos-dev   (Serial backend)\n"
    "  Or point CMake at an installed Kokkos:  -DKokkos_ROOT=/path/to/kokkos/install")
  return()
endif()

# Debian/TriBITS flavour: KokkosCore_INCLUDE_DIRS is set and the target's include dir lacks
# Kokkos_Core.hpp.
if(DEFINED KokkosCore_INCLUDE_DIRS)
  get_target_property(_tessera_kk_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  set(_tessera_kk_ok FALSE)
  foreach(_d IN LISTS _tessera_kk_inc)
    if(EXISTS "${_d}/Kokkos_Core.hpp")
      set(_tessera_kk_ok TRUE)
    endif()
  endforeach()
  if(NOT _tessera_kk_ok)
    set(_tessera_kk_fixed "")
    foreach(_d IN LISTS KokkosCore_INCLUDE_DIRS)
      get_filename_component(_d "${_d}" REALPATH)
      list(APPEND _tessera_kk_fixed "${_d}")
    endforeach()
    set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_INCLUDE_DIRECTORIES "${_tessera_kk_fixed}")
    # Drop the stray "-DKOKKOS_DEPENDENCE" pseudo-library from the link interface.
    get_target_property(_tessera_kk_libs Kokkos::kokkos INTERFACE_LINK_LIBRARIES)
    list(FILTER _tessera_kk_libs EXCLUDE REGEX "^-D")
    set_target_properties(Kokkos::kokkos PROPERTIES INTERFACE_LINK_LIBRARIES "${_tessera_kk_libs}")
  endif()
endif()

# Version: read it from the generated KokkosCore_config.h, which every Kokkos has.
set(TESSERA_KOKKOS_VERSION "${Kokkos_VERSION}")
get_target_property(_tessera_kk_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
foreach(_d IN LISTS _tessera_kk_inc)
  if(EXISTS "${_d}/KokkosCore_config.h")
    file(STRINGS "${_d}/KokkosCore_config.h" _v REGEX "^#define KOKKOS_VERSION [0-9]+")
    if(_v)
      string(REGEX REPLACE ".* ([0-9]+)$" "\\1" _v "${_v}")
      math(EXPR _maj "${_v} / 10000")
      math(EXPR _min "(${_v} / 100) % 100")
      math(EXPR _pat "${_v} % 100")
      if(_pat LESS 10)
        set(_pat "0${_pat}")
      endif()
      set(TESSERA_KOKKOS_VERSION "${_maj}.${_min}.${_pat}")
    endif()
  endif()
endforeach()
string(TOUPPER "${Kokkos_DEVICES}" TESSERA_KOKKOS_DEVICES)
# TESSERA_DEVICE_BUILD: the Kokkos found has a device backend (its tests need the device).
set(TESSERA_DEVICE_BUILD OFF)
foreach(_b IN LISTS TESSERA_DEVICE_BACKENDS)
  string(TOUPPER "${_b}" _b)
  if(_b IN_LIST TESSERA_KOKKOS_DEVICES)
    set(TESSERA_DEVICE_BUILD ON)
  endif()
endforeach()
if(TESSERA_KOKKOS_VERSION VERSION_LESS TESSERA_KOKKOS_MIN_VERSION)
  set(TESSERA_KOKKOS_ERROR
    "Tessera needs Kokkos ${TESSERA_KOKKOS_MIN_VERSION} or newer; the Kokkos found "
    "(config in ${Kokkos_DIR}) is ${TESSERA_KOKKOS_VERSION}.")
  return()
endif()

# tessera_require_kokkos_backend(<Serial|OpenMP|Cuda|HIP>)
#   Fails at configure time, naming the backend, when the Kokkos found lacks it. Uses Kokkos'
#   own kokkos_check() where the Kokkos package provides it (4.x), else its device list.
function(tessera_require_kokkos_backend backend)
  if(backend STREQUAL "")
    return()
  endif()
  string(TOUPPER "${backend}" _want)
  set(_known "")
  foreach(_b IN LISTS TESSERA_BACKENDS)
    string(TOUPPER "${_b}" _b)
    list(APPEND _known ${_b})
  endforeach()
  if(NOT _want IN_LIST _known)
    string(REPLACE ";" ", " _names "${TESSERA_BACKENDS}")
    message(FATAL_ERROR "Tessera: TESSERA_BACKEND=${backend} is not a Tessera backend (${_names})")
  endif()
  if(COMMAND kokkos_check)
    kokkos_check(DEVICES ${backend} RETURN_VALUE _have)
  elseif(_want IN_LIST TESSERA_KOKKOS_DEVICES)
    set(_have TRUE)
  else()
    set(_have FALSE)
  endif()
  if(NOT _have)
    message(FATAL_ERROR
      "Tessera: the '${backend}' backend was requested (TESSERA_BACKEND=${backend}), but the Kokkos "
      "found (version ${TESSERA_KOKKOS_VERSION}, config in ${Kokkos_DIR}) was built with: "
      "${Kokkos_DEVICES}.\n"
      "Install or build a Kokkos with Kokkos_ENABLE_${_want}=ON and point CMake at it, e.g.\n"
      "  cmake --preset <preset> -DKokkos_ROOT=/path/to/kokkos-with-${backend}\n"
      "(Debian's libtrilinos-kokkos-dev provides the Serial backend only.)")
  endif()
endfunction()

# tessera_require_gpu_emulation()
#   The GPU emulation (TESSERA_GPU_EMULATION) runs GPU-sized teams, one OpenMP thread per
#   logical thread, on Kokkos::OpenMP: it needs the OpenMP backend and a Kokkos whose host teams
#   hold as many members as a GPU block (1024; stock Kokkos caps them at 64). Fails at configure
#   time, naming the Kokkos found and the fix, otherwise.
function(tessera_require_gpu_emulation)
  tessera_require_kokkos_backend(OpenMP)
  set(_need 1024)
  set(_cap "")
  get_target_property(_inc Kokkos::kokkos INTERFACE_INCLUDE_DIRECTORIES)
  foreach(_d IN LISTS _inc)
    if(EXISTS "${_d}/impl/Kokkos_HostThreadTeam.hpp")
      file(STRINGS "${_d}/impl/Kokkos_HostThreadTeam.hpp" _l REGEX "max_team_members *= *[0-9]+")
      if(_l)
        string(REGEX REPLACE ".*max_team_members *= *([0-9]+).*" "\\1" _cap "${_l}")
      endif()
    endif()
  endforeach()
  if(_cap STREQUAL "")
    message(FATAL_ERROR
      "Tessera: TESSERA_GPU_EMULATION=ON, but the host team limit of the Kokkos found (version "
      "${TESSERA_KOKKOS_VERSION}, config in ${Kokkos_DIR}) could not be read from "
      "impl/Kokkos_HostThreadTeam.hpp. Use a Kokkos built by\n"
      "  ../shared/kokkos/build-kokkos.sh openmp-gpu PREFIX   (Kokkos 4.6.01 + kokkos-host-teams.patch)")
  elseif(_cap LESS _need)
    message(FATAL_ERROR
      "Tessera: TESSERA_GPU_EMULATION=ON needs host teams of up to ${_need} members (one per "
      "logical thread, as a GPU block), but the Kokkos found (version ${TESSERA_KOKKOS_VERSION}, "
      "config in ${Kokkos_DIR}) caps them at ${_cap}. Build one with\n"
      "  ../shared/kokkos/build-kokkos.sh openmp-gpu PREFIX   (Kokkos 4.6.01 + kokkos-host-teams.patch)\n"
      "and configure with -DKokkos_ROOT=PREFIX.")
  endif()
  message(STATUS "Tessera: GPU emulation on Kokkos::OpenMP (host teams up to ${_cap} members)")
endfunction()
