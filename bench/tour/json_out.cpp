// The tour's JSON output (see result.hpp for why this is its own translation unit).
#include "tour/result.hpp"

#include <nlohmann/json.hpp>

#include <fstream>
#include <stdexcept>

namespace tour {

void write_json(const std::string& path, const std::vector<result>& rs, double memcpy,
                const run_info& info) {
  nlohmann::json j;
  j["backend"] = info.backend;
  j["threads"] = info.threads;
  j["kokkos_version"] = info.kokkos_version;
  j["memcpy_gbs"] = memcpy;
  j["results"] = nlohmann::json::array();
  for (const auto& r : rs)
    j["results"].push_back(
        {{"workload", r.workload},
         {"size", r.size},
         {"tessera_s", r.tessera_s},
         {"eigen_s", r.eigen_s},
         {"speedup_vs_eigen", r.tessera_s > 0 && r.eigen_s > 0 ? r.eigen_s / r.tessera_s : 0.0},
         {"gflops", r.gflops},
         {"gbs", r.gbs},
         {"vs_memcpy", r.vs_memcpy},
         {"max_abs_error", r.max_abs_error},
         {"tolerance", r.tolerance},
         {"pass", r.pass},
         {"note", r.note}});
  std::ofstream f(path);
  if (!f) throw std::runtime_error("cannot write " + path);
  f << j.dump(2) << "\n";
}

}  // namespace tour
