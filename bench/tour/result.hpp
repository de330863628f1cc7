// The tour's result rows and their JSON output. Plain host C++ (no Kokkos or Tessera headers):
// the JSON writer is its own translation unit, compiled as C++ even in HIP builds (Debian's
// hipcc 5.2 crashes instantiating nlohmann::json in HIP mode).
#pragma once

#include <string>
#include <vector>

namespace tour {

/// One row of the table.
struct result {
  std::string workload, size;
  double tessera_s = 0, eigen_s = 0;
  double gflops = 0, gbs = 0;  // Tessera's rate; 0 when not meaningful
  // Tessera time / a same-size device copy (deep_copy of as many bytes read and written), timed
  // interleaved with Tessera in this workload; 0: use the run's global memcpy figure.
  double vs_memcpy = 0;
  double max_abs_error = 0, tolerance = 0;
  bool pass = false;
  std::string note;
};

/// What ran: backend name, its concurrency (threads or GPU lanes), Kokkos version.
struct run_info {
  std::string backend;
  int threads = 1;
  std::string kokkos_version;
};

/// Writes the rows, the run's memcpy bandwidth (GB/s) and `info` as JSON to `path`; throws
/// std::runtime_error when the file cannot be written.
void write_json(const std::string& path, const std::vector<result>& rs, double memcpy,
                const run_info& info);

}  // namespace tour
