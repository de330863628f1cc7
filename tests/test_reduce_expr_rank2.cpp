// Whole-array reductions of rank-2 expressions: the bits of the same reductions of their values
// materialized (a unit of test_reduce; helpers in reduce_util.hpp).
#include "reduce_util.hpp"

namespace {
// As test_reduce_expr.cpp's, on rank-2 arrays.
TEST_CASE("expressions fold to the bits of their values materialized: rank 2") {
  for (const auto& [rows, cols] : expression_rank2_shapes()) {
    const long r = rows, c = cols;  // (Clang 14 cannot capture structured bindings)
    CAPTURE(r);
    CAPTURE(c);
    const auto o = random_rank2_operands(extent<2>(r, c));
    check_expression_set(o.a, o.b, o.c, o.d);
  }
}

}  // namespace
