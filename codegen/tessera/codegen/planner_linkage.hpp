/// \file planner_linkage.hpp
/// \brief How the planner's entry points are compiled. lower(), plan_tile_kernel(),
///        plan_reduction(), plan_scan(), plan_histogram() and plan_sort() are how kernels are
///        planned: they run the passes (fusion, phases, barriers, scratch placement, thread
///        mapping, staging). Header only, they are inline functions that every translation unit
///        planning a kernel compiles, with those passes: about 10 s of a small unit's build at
///        -O3 with g++ 12.
///        With TESSERA_SEPARATE_PLANNER defined, units see their declarations only and link one
///        compiled definition of each, from one source file that defines TESSERA_PLANNER_SOURCE
///        and includes <tessera/codegen/planner.hpp> (the project's own targets link
///        tessera_planner, codegen/src/planner.cpp).
#pragma once

#ifdef TESSERA_PLANNER_SOURCE
/// The compiled planner: one strong definition of each entry point.
#define TESSERA_PLANNER_LINKAGE
#else
/// Header only: inline definitions.
#define TESSERA_PLANNER_LINKAGE inline
#endif

#if defined(TESSERA_SEPARATE_PLANNER) && !defined(TESSERA_PLANNER_SOURCE)
/// The entry points' bodies are compiled out of this unit (declarations only).
#define TESSERA_PLANNER_DECLARATIONS_ONLY 1
#endif
