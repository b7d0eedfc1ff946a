#pragma once
// Parameter initialization (torch.nn.init), in place and without recording a graph. Every
// function draws from `gen` (default: the global generator, seeded by manual_seed). On a
// deferred stand-in (nn/deferred_init.h) they record what to draw instead, from the
// counter-based generator when it is materialized, and `gen` is not used.
#include <optional>
#include <string>

#include "strider/core/generator.h"
#include "strider/core/tensor.h"

namespace strider::nn::init {

// fan_in = size(1) * receptive field, fan_out = size(0) * receptive field.
std::pair<int64_t, int64_t> fans(const Tensor& t);
void uniform_(const Tensor& t, double lo, double hi, Generator* gen = nullptr);
void normal_(const Tensor& t, double mean = 0.0, double std = 1.0, Generator* gen = nullptr);
// torch.nn.init.trunc_normal_: N(mean, std^2) restricted to [a, b] (drawn by the inverse CDF
// from a uniform draw, as PyTorch does).
void trunc_normal_(const Tensor& t, double mean = 0.0, double std = 1.0, double a = -2.0, double b = 2.0,
                   Generator* gen = nullptr);
// torch.nn.init.orthogonal_: t viewed as size(0) x (the rest) gets orthonormal rows or columns
// (whichever are fewer), times gain: the Q of a QR decomposition of standard normal draws, made
// unique by R's diagonal signs. Needs 2 or more dimensions; a zero-element tensor is a no-op.
// Works in float64 on the whole matrix (Householder, O(rows x cols x min(rows, cols))); on a
// deferred stand-in, each materialization (each rank's shard) draws the whole matrix.
void orthogonal_(const Tensor& t, double gain = 1.0, Generator* gen = nullptr);
void constant_(const Tensor& t, double value);
void zeros_(const Tensor& t);
void ones_(const Tensor& t);
// torch.nn.init.calculate_gain: "linear", "conv*", "sigmoid" 1, "tanh" 5/3, "relu" sqrt(2),
// "leaky_relu" sqrt(2/(1+slope^2)) with slope `param` (PyTorch's default 0.01 when not given),
// "selu" 3/4.
double calculate_gain(const std::string& nonlinearity, std::optional<double> param = std::nullopt);
void kaiming_uniform_(const Tensor& t, double a = 0.0, bool fan_in = true, const std::string& nonlinearity = "leaky_relu",
                      Generator* gen = nullptr);
void kaiming_normal_(const Tensor& t, double a = 0.0, bool fan_in = true, const std::string& nonlinearity = "leaky_relu",
                     Generator* gen = nullptr);
void xavier_uniform_(const Tensor& t, double gain = 1.0, Generator* gen = nullptr);
void xavier_normal_(const Tensor& t, double gain = 1.0, Generator* gen = nullptr);

}  // namespace strider::nn::init
