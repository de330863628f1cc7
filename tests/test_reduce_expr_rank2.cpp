// Whole-array reductions of rank-2 expressions: the bits of the same reductions of their values
// materialized (a unit of test_reduce; helpers in reduce_util.hpp).
#include "reduce_util.hpp"

namespace {
// As test_reduce_expr.cpp's, on rank-2 arrays.
TEST_CASE("expressions fold to the bits of their values materialized: rank 2") {
  for (const auto& [rows, cols] : std::vector<std::pair<long, long>>{
           {1, 1}, {5, 3}, {33, 17}, {7, 257}, {64, 64}, {3, 1000}, {300, 301}}) {
    const long r = rows, c = cols;  // (Clang 14 cannot capture structured bindings)
    CAPTURE(r);
    CAPTURE(c);
    const extent<2> x(r, c);
    const auto a = make_array(x, random_data<float>(r * c));
    const auto b = make_array(x, random_data<float>(r * c));
    const auto cd = make_array(x, random_data<double>(r * c));
    const auto dd = make_array(x, random_data<double>(r * c));
    check_expression_set(a, b, cd, dd);
  }
}

}  // namespace
