// The attention oracle: softmax(scale * q k^T (masked)) v one query row at a time, in float64,
// through strides; the backward recomputes each row's probabilities exactly instead of trusting
// a saved log-sum-exp.
#include <cmath>
#include <limits>
#include <vector>

#include "kernels/attention.h"
#include "strider/core/dispatch.h"

namespace strider::kernels::ref {
namespace {

template <class T>
struct Heads {
  T* data;
  const int64_t* strides;
  explicit Heads(const Tensor& t) : data(static_cast<T*>(t.data())), strides(t.strides().data()) {}
  T& at(int64_t b, int64_t h, int64_t r, int64_t d) const {
    return data[b * strides[0] + h * strides[1] + r * strides[2] + d * strides[3]];
  }
};

// Row i's probabilities over keys 0..visible-1 (the rest are masked); returns log(sum of exps).
template <class T>
double probabilities(const Heads<const T>& q, const Heads<const T>& k, int64_t b, int64_t h, int64_t i, int64_t D,
                     int64_t visible, double scale, std::vector<double>& prob) {
  double mx = -std::numeric_limits<double>::infinity();
  for (int64_t j = 0; j < visible; ++j) {
    double s = 0;
    for (int64_t d = 0; d < D; ++d) s += static_cast<double>(q.at(b, h, i, d)) * static_cast<double>(k.at(b, h, j, d));
    prob[j] = s * scale;
    mx = std::max(mx, prob[j]);
  }
  double sum = 0;
  for (int64_t j = 0; j < visible; ++j) sum += prob[j] = std::exp(prob[j] - mx);
  for (int64_t j = 0; j < visible; ++j) prob[j] /= sum;
  return mx + std::log(sum);
}

}  // namespace

void attention_forward(const AttentionForward& p) {
  const int64_t B = p.q.sizes()[0], H = p.q.sizes()[1], L = p.q.sizes()[2], D = p.q.sizes()[3], S = p.k.sizes()[2];
  dispatch_floating(p.q.dtype(), "scaled_dot_product_attention", [&]<class T>() {
    dispatch_floating(p.lse.dtype(), "scaled_dot_product_attention", [&]<class U>() {
      const Heads<const T> q(p.q), k(p.k), v(p.v);
      const Heads<T> out(p.out);
      U* lse = static_cast<U*>(p.lse.data());
      std::vector<double> prob(S), acc(D);
      for (int64_t b = 0; b < B; ++b)
        for (int64_t h = 0; h < H; ++h)
          for (int64_t i = 0; i < L; ++i) {
            const int64_t visible = p.causal ? std::min(S, i + 1) : S;
            lse[(b * H + h) * L + i] = static_cast<U>(probabilities(q, k, b, h, i, D, visible, p.scale, prob));
            std::fill(acc.begin(), acc.end(), 0.0);
            for (int64_t j = 0; j < visible; ++j)
              for (int64_t d = 0; d < D; ++d) acc[d] += prob[j] * static_cast<double>(v.at(b, h, j, d));
            for (int64_t d = 0; d < D; ++d) out.at(b, h, i, d) = static_cast<T>(acc[d]);
          }
    });
  });
}

void attention_backward(const AttentionBackward& p) {
  const int64_t B = p.q.sizes()[0], H = p.q.sizes()[1], L = p.q.sizes()[2], D = p.q.sizes()[3], S = p.k.sizes()[2];
  dispatch_floating(p.q.dtype(), "scaled_dot_product_attention", [&]<class T>() {
    const Heads<const T> q(p.q), k(p.k), v(p.v), g(p.dout);
    const Heads<T> dq(p.dq), dk(p.dk), dv(p.dv);
    std::vector<double> prob(S), dprob(S), dq_row(D), dk_acc(S * D), dv_acc(S * D);
    for (int64_t b = 0; b < B; ++b)
      for (int64_t h = 0; h < H; ++h) {
        std::fill(dk_acc.begin(), dk_acc.end(), 0.0);
        std::fill(dv_acc.begin(), dv_acc.end(), 0.0);
        for (int64_t i = 0; i < L; ++i) {
          const int64_t visible = p.causal ? std::min(S, i + 1) : S;
          probabilities(q, k, b, h, i, D, visible, p.scale, prob);
          double weighted = 0;  // sum_j P_ij dP_ij = dout_i . out_i
          for (int64_t j = 0; j < visible; ++j) {
            double dp = 0;
            for (int64_t d = 0; d < D; ++d) {
              const double gd = static_cast<double>(g.at(b, h, i, d));
              dp += gd * static_cast<double>(v.at(b, h, j, d));
              dv_acc[j * D + d] += prob[j] * gd;
            }
            dprob[j] = dp;
            weighted += prob[j] * dp;
          }
          std::fill(dq_row.begin(), dq_row.end(), 0.0);
          for (int64_t j = 0; j < visible; ++j) {
            const double ds = prob[j] * (dprob[j] - weighted) * p.scale;
            for (int64_t d = 0; d < D; ++d) {
              dq_row[d] += ds * static_cast<double>(k.at(b, h, j, d));
              dk_acc[j * D + d] += ds * static_cast<double>(q.at(b, h, i, d));
            }
          }
          for (int64_t d = 0; d < D; ++d) dq.at(b, h, i, d) = static_cast<T>(dq_row[d]);
        }
        for (int64_t j = 0; j < S; ++j)
          for (int64_t d = 0; d < D; ++d) {
            dk.at(b, h, j, d) = static_cast<T>(dk_acc[j * D + d]);
            dv.at(b, h, j, d) = static_cast<T>(dv_acc[j * D + d]);
          }
      }
  });
}

}  // namespace strider::kernels::ref
