/// \file tessera.hpp
/// \brief Tessera: tiled C++ AMP-style kernels and array expressions, lowered onto Kokkos
///        TeamPolicy kernels. Include this header; everything lives in namespace `tessera`.
///
/// This header sits above the three layers it gathers (data flows one way): dsl/ (index space,
/// data, tile-kernel and tile-program vocabulary, expression nodes) -> codegen/ (expression
/// graph, kernel plans, lowering passes) -> backends/ (generic launch code reading the plan,
/// and one folder per backend). No layer includes it.
#pragma once

#include <tessera/version.hpp>

#include <tessera/dsl/array.hpp>
#include <tessera/dsl/array_view.hpp>
#include <tessera/dsl/atomics.hpp>
#include <tessera/dsl/boundary.hpp>
#include <tessera/dsl/config.hpp>
#include <tessera/dsl/copy.hpp>
#include <tessera/dsl/errors.hpp>
#include <tessera/dsl/expr/nodes.hpp>
#include <tessera/dsl/index.hpp>
#include <tessera/dsl/runtime.hpp>
#include <tessera/dsl/tile_collectives.hpp>
#include <tessera/dsl/tile_group.hpp>
#include <tessera/dsl/tile_program.hpp>
#include <tessera/dsl/tiled_extent.hpp>

#include <tessera/codegen/kernel_plan.hpp>
#include <tessera/codegen/lower.hpp>

#include <tessera/backends/backend.hpp>
#include <tessera/backends/execute.hpp>
#include <tessera/backends/histogram.hpp>
#include <tessera/backends/reduce.hpp>
#include <tessera/backends/scan.hpp>
#include <tessera/backends/sort.hpp>
#include <tessera/backends/tile_launch.hpp>
#include <tessera/backends/tuning.hpp>

#if __has_include(<Eigen/Core>)
#include <tessera/dsl/eigen.hpp>
#endif
