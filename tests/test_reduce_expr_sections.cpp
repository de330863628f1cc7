// Whole-array reductions of expressions of sections (rows apart in memory): the bits of the same
// reductions of their values materialized, and of the same expressions of contiguous arrays (a
// unit of test_reduce; helpers in reduce_util.hpp).
#include "reduce_util.hpp"

namespace {
// As test_reduce_expr.cpp's, on sections of wider rank-2 arrays.
TEST_CASE("expressions fold to the bits of their values materialized: sections of rank 2") {
  for (const auto& [rows, cols] : expression_rank2_shapes()) {
    const long r = rows, c = cols;  // (Clang 14 cannot capture structured bindings)
    CAPTURE(r);
    CAPTURE(c);
    const extent<2> x(r, c), wide(r, c + 3);
    const auto o = random_rank2_operands(x);
    // The same values in sections of wider arrays: the same bits again.
    array<float, 2> a2(wide), b2(wide);
    array<double, 2> c2(wide), d2(wide);
    const auto sec = [&](const auto& big) {
      return big.section(index<2>(0, 2), x);
    };
    tessera::copy(o.a, sec(a2));
    tessera::copy(o.b, sec(b2));
    tessera::copy(o.c, sec(c2));
    tessera::copy(o.d, sec(d2));
    check_expression_set(sec(a2), sec(b2), sec(c2), sec(d2));
    CHECK(bits(sum(sec(a2) * sec(b2))) == bits(sum(o.a * o.b)));
    CHECK(bits(sum(sec(c2) * sec(d2))) == bits(sum(o.c * o.d)));
    CHECK(bits(max_value(sec(a2) * sec(b2))) == bits(max_value(o.a * o.b)));
  }
}

}  // namespace
