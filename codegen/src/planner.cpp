/// \file planner.cpp
/// \brief The compiled planner (library tessera_planner): one definition of each of its entry
///        points, with the passes they run, for the project's own targets, whose units define
///        TESSERA_SEPARATE_PLANNER and see the declarations only (planner_linkage.hpp).
#define TESSERA_PLANNER_SOURCE 1
#include <tessera/codegen/planner.hpp>
