/// \file planner.hpp
/// \brief Every entry point of the planner (lower(), plan_tile_kernel(), plan_reduction(),
///        plan_scan(), plan_histogram(), plan_sort()). Included by the one source file that
///        compiles them when a program defines TESSERA_SEPARATE_PLANNER (planner_linkage.hpp):
///        \code
///          #define TESSERA_PLANNER_SOURCE 1   // before any Tessera header in this file
///          #include <tessera/codegen/planner.hpp>
///        \endcode
#pragma once

#include <tessera/codegen/lower.hpp>
#include <tessera/codegen/passes/reduction.hpp>
#include <tessera/codegen/passes/scan.hpp>
#include <tessera/codegen/passes/sort.hpp>
#include <tessera/codegen/passes/tile_kernel.hpp>
