# Cross compilation for 64-bit Arm Linux with Debian's cross compiler
# (apt-get install g++-aarch64-linux-gnu; tests run under qemu-user: apt-get install qemu-user).
# Kokkos must be built with the same toolchain (the `aarch64` preset; README: "Other CPUs").
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
# Target libraries from the Debian cross sysroot; headers-only dependencies (Eigen, doctest,
# nlohmann-json, CLI11) and Kokkos_ROOT from the host.
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
# ctest runs the test binaries through qemu-user, with the cross sysroot's loader and libraries.
find_program(TESSERA_QEMU_AARCH64 qemu-aarch64)
if(TESSERA_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR "${TESSERA_QEMU_AARCH64};-L;/usr/aarch64-linux-gnu")
endif()
