#pragma once
// Typed forward signatures for modules: a module writes its forward with the parameters it
// needs and forwards Module::forward_args to it with bind_forward, which binds the call's Args
// by position or keyword, converts each Value to the parameter's type and the result back:
//
//   class Classifier : public nn::Module {
//    public:
//     using nn::Module::forward;  // keeps the single-tensor overload visible (no hiding)
//     std::tuple<Tensor, Tensor> forward(const Tensor& ids, const Tensor& mask, std::optional<Tensor> labels);
//     nn::Value forward_args(const nn::Args& args) override {
//       return nn::bind_forward(args, {"ids", "mask", "labels"},
//                               [this](const Tensor& ids, const Tensor& mask, std::optional<Tensor> labels) {
//                                 return forward(ids, mask, labels);
//                               });
//     }
//   };
//
// A typed member function can be bound directly, even an overloaded forward (the number of names
// picks the overload with that many parameters): bind_forward(args, {"ids", "mask"}, *this,
// &Classifier::forward).
//
// Parameter types: Tensor, bool, int64_t, int, double, std::string, std::vector<Tensor>, Value,
// and std::optional of any of them. A parameter is optional (None or absent binds nullopt, or
// None for Value) exactly when its type is std::optional or Value; the optional ones come last.
// Result types: Tensor, Value, bool, int64_t, double, std::string, std::vector<Tensor>,
// std::pair and std::tuple of those (a list), void (None). Binding errors name the signature
// and the call; Module::call prefixes them with the module chain.
#include <limits>
#include <optional>
#include <string>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "strider/nn/value.h"

namespace strider::nn {
namespace binding {

template <class T>
struct IsOptional : std::false_type {};
template <class T>
struct IsOptional<std::optional<T>> : std::true_type {};

template <class T>
constexpr bool is_optional_parameter = IsOptional<std::decay_t<T>>::value || std::is_same_v<std::decay_t<T>, Value>;

template <class T>
T from_value(const Value& v) {
  if constexpr (IsOptional<T>::value) {
    if (v.is_none()) return std::nullopt;
    return from_value<typename T::value_type>(v);
  } else if constexpr (std::is_same_v<T, Value>) {
    return v;
  } else if constexpr (std::is_same_v<T, Tensor>) {
    return v.tensor();
  } else if constexpr (std::is_same_v<T, bool>) {
    return v.to_bool();
  } else if constexpr (std::is_integral_v<T>) {
    const int64_t i = v.to_int();
    bool fits = true;
    if constexpr (std::is_signed_v<T>)
      fits = i >= static_cast<int64_t>(std::numeric_limits<T>::min()) && i <= static_cast<int64_t>(std::numeric_limits<T>::max());
    else
      fits = i >= 0 && static_cast<uint64_t>(i) <= static_cast<uint64_t>(std::numeric_limits<T>::max());
    STRIDER_CHECK(fits, "bind_forward", "the value ", i, " does not fit the parameter's ", sizeof(T) * 8,
                  "-bit integer type");
    return static_cast<T>(i);
  } else if constexpr (std::is_floating_point_v<T>) {
    return static_cast<T>(v.to_double());
  } else if constexpr (std::is_same_v<T, std::string>) {
    return v.str();
  } else if constexpr (std::is_same_v<T, std::vector<Tensor>>) {
    std::vector<Tensor> out;
    for (const Value& item : v.items()) out.push_back(item.tensor());
    return out;
  } else {
    static_assert(sizeof(T) == 0, "bind_forward: unsupported parameter type");
  }
}

template <class T>
Value to_value(T&& r) {
  using D = std::decay_t<T>;
  if constexpr (std::is_same_v<D, Value> || std::is_same_v<D, Tensor> || std::is_same_v<D, bool> ||
                std::is_same_v<D, double> || std::is_same_v<D, std::string> || std::is_same_v<D, std::vector<Tensor>>) {
    return Value(std::forward<T>(r));
  } else if constexpr (std::is_integral_v<D>) {
    return Value(static_cast<int64_t>(r));
  } else if constexpr (IsOptional<D>::value) {
    return r ? to_value(*r) : Value();
  } else {
    // std::pair / std::tuple: a list, element by element.
    return std::apply([](auto&&... e) { return Value::list({to_value(std::forward<decltype(e)>(e))...}); },
                      std::forward<T>(r));
  }
}

template <class... P>
size_t required_parameters() {
  constexpr bool optional[] = {is_optional_parameter<P>..., false};
  size_t n = 0;
  while (n < sizeof...(P) && !optional[n]) ++n;
  for (size_t i = n; i < sizeof...(P); ++i)
    STRIDER_CHECK(optional[i], "bind_forward", "the optional parameters (std::optional, Value) of a forward must come last");
  return n;
}

template <class Invoke, class R, class... P, size_t... I>
Value call_bound(Invoke&& invoke, const std::vector<Value>& bound, std::index_sequence<I...>) {
  if constexpr (std::is_void_v<R>) {
    invoke(from_value<std::decay_t<P>>(bound[I])...);
    return Value();
  } else {
    return to_value(invoke(from_value<std::decay_t<P>>(bound[I])...));
  }
}

template <class R, class... P, class Invoke>
Value bind_and_call(const char* op, Invoke&& invoke, const Args& args, const std::vector<std::string_view>& names) {
  STRIDER_CHECK(names.size() == sizeof...(P), op, "bind_forward was given ", names.size(),
                " parameter names for a forward with ", sizeof...(P), " parameters");
  const std::vector<Value> bound = args.bind(op, names, required_parameters<P...>());
  return call_bound<Invoke, R, P...>(std::forward<Invoke>(invoke), bound, std::index_sequence_for<P...>{});
}

template <class R, class... P, class Self, class Fn>
Value bind_member(const Args& args, const std::vector<std::string_view>& names, Self& self, Fn fn) {
  return bind_and_call<R, P...>(
      "forward", [&](auto&&... a) -> decltype(auto) { return (self.*fn)(std::forward<decltype(a)>(a)...); }, args,
      names);
}

template <class F>
struct Signature : Signature<decltype(&F::operator())> {};
template <class C, class R, class... P>
struct Signature<R (C::*)(P...) const> {
  template <class Invoke>
  static Value call(Invoke&& f, const Args& args, std::initializer_list<std::string_view> names) {
    return bind_and_call<R, P...>("forward", std::forward<Invoke>(f), args, names);
  }
};
template <class C, class R, class... P>
struct Signature<R (C::*)(P...)> : Signature<R (C::*)(P...) const> {};

}  // namespace binding

// Binds `args` to the parameters of `fn` (a lambda or other callable with one operator()).
template <class F>
Value bind_forward(const Args& args, std::initializer_list<std::string_view> names, F&& fn) {
  return binding::Signature<std::decay_t<F>>::call(std::forward<F>(fn), args, names);
}

// Binds `args` to the member function `fn` of `self` (or of a base of its class), const or not.
// `fn` may name an overload set, such as a forward beside Module's single-tensor one: there is
// one overload per parameter count taking the names as an array of that many, so only the
// member with as many parameters as names fits (deducing the parameters from an overload set
// with several members fails, on clang even when all but one are a base's). Up to 8
// parameters; beyond, bind a lambda.
#define STRIDER_BIND_FORWARD_EXPAND(...) __VA_ARGS__
#define STRIDER_BIND_FORWARD_ARITY(N, TEMPLATE_PARAMS, PARAMS)                                                  \
  template <class M, class B, class R, STRIDER_BIND_FORWARD_EXPAND TEMPLATE_PARAMS>                             \
    requires std::is_base_of_v<B, M>                                                                            \
  Value bind_forward(const Args& args, const std::string_view (&names)[N], M& self,                             \
                     R (B::*fn)(STRIDER_BIND_FORWARD_EXPAND PARAMS)) {                                          \
    return binding::bind_member<R, STRIDER_BIND_FORWARD_EXPAND PARAMS>(args, {names, names + N}, self, fn);     \
  }                                                                                                             \
  template <class M, class B, class R, STRIDER_BIND_FORWARD_EXPAND TEMPLATE_PARAMS>                             \
    requires std::is_base_of_v<B, M>                                                                            \
  Value bind_forward(const Args& args, const std::string_view (&names)[N], const M& self,                       \
                     R (B::*fn)(STRIDER_BIND_FORWARD_EXPAND PARAMS) const) {                                    \
    return binding::bind_member<R, STRIDER_BIND_FORWARD_EXPAND PARAMS>(args, {names, names + N}, self, fn);     \
  }
STRIDER_BIND_FORWARD_ARITY(1, (class P1), (P1))
STRIDER_BIND_FORWARD_ARITY(2, (class P1, class P2), (P1, P2))
STRIDER_BIND_FORWARD_ARITY(3, (class P1, class P2, class P3), (P1, P2, P3))
STRIDER_BIND_FORWARD_ARITY(4, (class P1, class P2, class P3, class P4), (P1, P2, P3, P4))
STRIDER_BIND_FORWARD_ARITY(5, (class P1, class P2, class P3, class P4, class P5), (P1, P2, P3, P4, P5))
STRIDER_BIND_FORWARD_ARITY(6, (class P1, class P2, class P3, class P4, class P5, class P6), (P1, P2, P3, P4, P5, P6))
STRIDER_BIND_FORWARD_ARITY(7, (class P1, class P2, class P3, class P4, class P5, class P6, class P7),
                           (P1, P2, P3, P4, P5, P6, P7))
STRIDER_BIND_FORWARD_ARITY(8, (class P1, class P2, class P3, class P4, class P5, class P6, class P7, class P8),
                           (P1, P2, P3, P4, P5, P6, P7, P8))
#undef STRIDER_BIND_FORWARD_ARITY
#undef STRIDER_BIND_FORWARD_EXPAND

}  // namespace strider::nn
