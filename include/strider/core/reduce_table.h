#pragma once
// The reductions, one row each: the one place a reduction is added, as core/pointwise_table.h
// is for the elementwise ops. The public headers (ops/reduce.h, autograd/functions.h) expand
// the first four columns into declarations; the kernels get their enum, names, accumulators and
// results; the ops layer the functions (dtype rule, empty input); autograd the gradients; the
// tests and the oracle replay their lists. It includes nothing: the other columns are text
// that only the library's own sources expand.
//
// STRIDER_REDUCE_OPS(X):
//   X(Enum, function, name, signature, dtype_rule, empty, accumulate, result, saves, gradient)
//   function    the public function (ops:: and the differentiable one).
//   name        the kernel's name, in errors and the verbose log (amax and max(t) share "max").
//   signature   what the public headers declare (STRIDER_REDUCE_SIGNATURE_* below); an empty
//               dims list reduces every dimension:
//                 Dims: f(t, dims = {}, keepdim = false);
//                 DimsDtype: the same and dtype (the input converts to it first);
//                 Correction: f(t, dims = {}, correction = 1, keepdim = false);
//                 OptionalDim: f(t, dim = nullopt, keepdim = false), nullopt: the flattened tensor.
//   dtype_rule  the result's dtype: Same; Long (indices); IntegersToLong (integral and bool
//               inputs give int64); FloatingOnly (a non-floating input is an error).
//   empty       the result over no elements: Zero, One, NaN, or Refused (an error naming the
//               zero-size dimension, unless the result itself is empty).
//   accumulate  what the kernels gather per output (kernels/reduce_accumulate.h): Sum, Prod,
//               Max or Min (the first extreme element and its index; NaN wins), or Centered
//               (the sum, then a second pass for the squared deviations from the mean).
//   result      the output from the accumulator `acc` (sum, prod, best, best_index), the
//               element count n, the squared deviations sq (Centered), the arguments `a`
//               (ReduceArgs) and the output's type TO; cast to TO.
//   saves       what the backward keeps: NoGrad (no gradient), Shapes, Input, or
//               InputOutput.
//   gradient    the input's gradient (ops:: calls) from g (the output's gradient with the
//               reduced dims put back as size 1), x (the saved input), y (the saved output,
//               reduced dims put back), sizes and dtype (the input's), dims (as given), n (the
//               elements per output, a double) and correction (Correction rows).
//
// Enum order is the order of the rows.

#define STRIDER_REDUCE_OPS(X)                                                                        \
  X(Sum, sum, "sum", DimsDtype, IntegersToLong, Zero, Sum, (acc.sum), Shapes,                        \
    (autograd::reduce_to(ops::expand(g, sizes), sizes, dtype)))                                      \
  X(Mean, mean, "mean", Dims, FloatingOnly, NaN, Sum,                                                \
    (static_cast<double>(acc.sum) / static_cast<double>(n)), Shapes, (ops::div(ops::expand(g, sizes), n))) \
  X(Prod, prod, "prod", Dims, IntegersToLong, One, Prod, (acc.prod), Input,                          \
    (prod_backward(g, x, dims, sizes)))                                                              \
  X(Amax, amax, "max", Dims, Same, Refused, Max, (static_cast<opmath_t<TO>>(acc.best)), InputOutput, \
    (extremum_backward(g, x, y, dims)))                                                              \
  X(Amin, amin, "min", Dims, Same, Refused, Min, (static_cast<opmath_t<TO>>(acc.best)), InputOutput, \
    (extremum_backward(g, x, y, dims)))                                                              \
  X(Argmax, argmax, "argmax", OptionalDim, Long, Refused, Max, (acc.best_index), NoGrad, ())         \
  X(Argmin, argmin, "argmin", OptionalDim, Long, Refused, Min, (acc.best_index), NoGrad, ())         \
  X(Var, var, "var", Correction, FloatingOnly, NaN, Centered,                                        \
    (sq / std::max(0.0, static_cast<double>(n - a.correction))), Input, /* PyTorch 1.13 */            \
    (ops::mul(ops::sub(x, ops::mean(x, dims, true)), ops::div(g, (n - static_cast<double>(correction)) / 2.0))))

// The public declarations of a row, in the namespace of the header that expands
// STRIDER_REDUCE_OPS(STRIDER_DECLARE_REDUCTION) (strider::ops in ops/reduce.h, strider in
// autograd/functions.h). Needs core/tensor.h and <optional>.
#define STRIDER_DECLARE_REDUCTION(Enum, function, name, signature, ...) STRIDER_REDUCE_SIGNATURE_##signature(function)
#define STRIDER_REDUCE_SIGNATURE_Dims(f) Tensor f(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false);
#define STRIDER_REDUCE_SIGNATURE_DimsDtype(f)                                  \
  Tensor f(const Tensor& t, IntArrayRef dims = {}, bool keepdim = false, \
           std::optional<ScalarType> dtype = std::nullopt);
#define STRIDER_REDUCE_SIGNATURE_Correction(f) \
  Tensor f(const Tensor& t, IntArrayRef dims = {}, int64_t correction = 1, bool keepdim = false);
#define STRIDER_REDUCE_SIGNATURE_OptionalDim(f) \
  Tensor f(const Tensor& t, std::optional<int64_t> dim = std::nullopt, bool keepdim = false);
