/// \file tessera.hpp
/// \brief Tessera: tiled C++ AMP-style kernels and array expressions, lowered onto Kokkos
///        TeamPolicy kernels. Include this header; everything lives in namespace `tessera`.
#pragma once

#include <tessera/backends/expr_eval.hpp>
#include <tessera/backends/reduce.hpp>
#include <tessera/backends/tile_launch.hpp>
#include <tessera/backends/tile_program.hpp>
#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/codegen/lower.hpp>
#include <tessera/dsl/array.hpp>
#include <tessera/dsl/config.hpp>
#include <tessera/dsl/eigen.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/expr/nodes.hpp>
#include <tessera/dsl/index.hpp>
#include <tessera/dsl/runtime.hpp>
#include <tessera/dsl/tile_group.hpp>
#include <tessera/dsl/tiled_extent.hpp>
