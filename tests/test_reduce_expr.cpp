// Whole-array reductions of expressions and sections: the bits of the same reductions of
// their values materialized, ranks 1 and 3 (a unit of test_reduce; rank 2 in
// test_reduce_expr_rank2.cpp, sections in test_reduce_expr_sections.cpp; helpers in
// reduce_util.hpp: each unit's expressions instantiate the host folds' vector code anew).
#include "reduce_util.hpp"

namespace {
// The same through the public functions: sum over an array, a section of a larger one (rows
// apart in memory) and an expression of either (the generic fold) agree to the bit.
TEST_CASE("rank 2: sums of arrays, sections and expressions of them agree bitwise") {
  for (const auto& [rows, cols] : std::vector<std::pair<long, long>>{
           {1, 1}, {5, 3}, {100, 10}, {33, 17}, {64, 64}, {7, 257}, {3, 1000}, {2, 4099}}) {
    const long r = rows, c = cols;  // (Clang 14 cannot capture structured bindings)
    CAPTURE(r);
    CAPTURE(c);
    const auto m = tt::random_matrix<float>(rows, cols + 5);
    const array<float, 2> big = from_eigen(m);
    const auto sec = big.section(index<2>(0, 2), extent<2>(rows, cols));  // rows apart
    array<float, 2> a(extent<2>(rows, cols));                             // contiguous
    tessera::copy(sec, a);
    CHECK(bits(sum(a)) == bits(sum(sec)));
    CHECK(bits(sum(a)) == bits(sum(a * 1.f)));
    const auto md = tt::random_matrix<double>(rows, cols);
    const array<double, 2> ad = from_eigen(md);
    CHECK(bits(sum(ad)) == bits(sum(ad * 1.0)));
  }
}

// Reductions read an expression's elements where they are computed (the CPU backends compute
// W consecutive elements into one vector register when every operand is contiguous, and
// otherwise evaluate them into a buffer; GPU backends one element at a time): whatever the
// path, every reduction of an expression gives the bits of the same reduction of its values
// materialized in an array, at every rank and length (lanes, blocks and chunks cut anywhere),
// on contiguous operands and on sections of larger arrays (rows apart in memory).
TEST_CASE("expressions fold to the bits of their values materialized: ranks 1 and 3") {
  for (long n : {1L, 3L, 16L, 17L, 255L, 256L, 257L, 1023L, 4099L, 65536L + 77, 3 * 65536L + 5}) {
    CAPTURE(n);
    const extent<1> x(n);
    check_expression_set(make_array(x, random_data<float>(n)), make_array(x, random_data<float>(n)),
                         make_array(x, random_data<double>(n)),
                         make_array(x, random_data<double>(n)));
  }
  for (const auto& x : {extent<3>(2, 3, 17), extent<3>(4, 5, 300), extent<3>(1, 1, 70001)}) {
    CAPTURE(to_string(x));
    const long n = x.size();
    const auto a = make_array(x, random_data<float>(n)), b = make_array(x, random_data<float>(n));
    check_folds_as_materialized<true>(a * b);
    check_folds_as_materialized(shift(a, index<3>(0, 1, -1), boundary::clamp) * b);
  }
}

}  // namespace
