// The umbrella header provides SPEC's public names; every public header also compiles on its
// own (see tessera_header_check in CMakeLists.txt, built before this test).
#include <doctest/doctest.h>
#include <tessera/tessera.hpp>

#include <string>
#include <type_traits>

TEST_CASE("public names from the umbrella header") {
  static_assert(std::is_class_v<tessera::index<2>>);
  static_assert(std::is_class_v<tessera::extent<3>>);
  static_assert(std::is_class_v<tessera::tiled_extent<16, 16>>);
  static_assert(std::is_class_v<tessera::tiled_index<4>>);
  static_assert(std::is_class_v<tessera::array<float, 2>>);
  static_assert(std::is_class_v<tessera::array_view<const float, 2>>);
  static_assert(std::is_class_v<tessera::tile_group<8, 8>>);
  static_assert(std::is_base_of_v<tessera::error, tessera::race_error>);
  static_assert(std::is_base_of_v<tessera::error, tessera::bounds_error>);
  static_assert(std::is_base_of_v<tessera::error, tessera::shape_error>);
  CHECK(Kokkos::is_initialized());
  CHECK(tessera::backend_name() == std::string(Kokkos::DefaultExecutionSpace::name()) +
                                       (tessera::gpu_emulation ? " (GPU emulation)" : ""));
  CHECK(tessera::kokkos_version().find('.') != std::string::npos);
  // The backends CMake knows (cmake/TesseraKokkos.cmake) are those the headers name (CMake's
  // list is joined by "," alone: nvcc_wrapper splits a definition's value at spaces).
  std::string names = TESSERA_BACKEND_NAMES;
  std::erase(names, ' ');
  CHECK(names == std::string(TESSERA_CMAKE_BACKENDS));
  // Every backend of this build keeps the contract (also a static_assert in backend.hpp).
  static_assert(tessera::backends::backend_contract<tessera::execution_space>);
}
