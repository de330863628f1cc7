/// \file report.hpp
/// \brief Printing helpers shared by the examples.
#pragma once

#include <tessera/tessera.hpp>

#include <cstdio>
#include <string>

namespace workloads {

/// Prints a matrix with one decimal, one row per line, like the seed's expected output.
template <class M>
void print_matrix(const M& m) {
  for (Eigen::Index r = 0; r < m.rows(); ++r) {
    for (Eigen::Index c = 0; c < m.cols(); ++c) std::printf("%6.1f", double(m(r, c)));
    std::printf("\n");
  }
}

/// Prints "name: PASS/FAIL (detail)" and returns ok.
inline bool verdict(const std::string& name, bool ok, const std::string& detail = "") {
  std::printf("%-44s %s%s%s\n", name.c_str(), ok ? "PASS" : "FAIL", detail.empty() ? "" : "  ",
              detail.c_str());
  return ok;
}

}  // namespace workloads
