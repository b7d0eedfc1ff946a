#pragma once
// Value and Args: what flows into and out of a module whose forward is not one tensor in, one
// tensor out (token ids plus a padding mask; logits plus a loss; an encoder output beside the
// decoder input). A Value is None, a Tensor, a bool, an int64, a double, a string, a list of
// Values or a dict of named Values (PyTorch's IValue, without the rest). Args are a call's
// positional Values plus its keyword arguments, as hooks and wrappers see them:
//
//   Value out = (*model)(ids, nn::kw("key_padding_mask", mask));
//   Tensor logits = out[0].tensor(), loss = out[1].tensor();
//
// Values are cheap to copy: tensors share storage, lists and dicts share their (immutable) items.
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <variant>
#include <vector>

#include "strider/core/tensor.h"

namespace strider::nn {

class ModuleOutput;

class Value {
 public:
  enum class Kind { None, Tensor, Bool, Int, Double, String, List, Dict };

  Value() = default;  // None
  Value(Tensor t) : v_(std::move(t)) {}
  Value(bool b) : v_(b) {}
  Value(int i) : v_(static_cast<int64_t>(i)) {}
  Value(int64_t i) : v_(i) {}
  Value(double d) : v_(d) {}
  Value(std::nullptr_t) {}  // None: kw("mask", nullptr) reads as Python's mask=None
  Value(const char* s) : v_(s == nullptr ? decltype(v_)() : decltype(v_)(std::string(s))) {}  // null: None
  Value(std::string s) : v_(std::move(s)) {}
  Value(std::vector<Tensor> tensors);  // a list of tensors
  Value(const ModuleOutput& output);   // the whole output of a call (*m)(x)
  static Value list(std::vector<Value> items);
  // Keys must be unique; their order is kept.
  static Value dict(std::vector<std::pair<std::string, Value>> items);

  Kind kind() const;
  bool is_none() const { return kind() == Kind::None; }
  bool is_tensor() const { return kind() == Kind::Tensor; }
  bool is_list() const { return kind() == Kind::List; }
  bool is_dict() const { return kind() == Kind::Dict; }

  // Accessors throw strider::Error naming the kind found when the Value holds another kind.
  const Tensor& tensor() const;
  // A Tensor, or an undefined Tensor for None (optional tensor arguments such as masks).
  Tensor tensor_or_undefined() const;
  bool to_bool() const;
  int64_t to_int() const;
  double to_double() const;  // an Int converts
  const std::string& str() const;
  // Items of a list or dict (in order), element i of a list, the item named `key` of a dict.
  const std::vector<Value>& items() const;
  size_t size() const { return items().size(); }
  const Value& operator[](size_t i) const;
  const Value& at(std::string_view key) const;
  bool contains(std::string_view key) const;
  const std::vector<std::string>& keys() const;

  // "None", "Tensor [2, 3] float32", "list of 2", ... for messages.
  std::string describe() const;

 private:
  struct Composite {
    bool is_dict = false;
    std::vector<std::string> keys;  // dict only
    std::vector<Value> items;
  };
  std::variant<std::monostate, Tensor, bool, int64_t, double, std::string, std::shared_ptr<const Composite>> v_;
  const Composite& composite(const char* wanted) const;
};

const char* to_string(Value::Kind kind);

// What a call with one tensor, (*m)(x), returns. It is the output Tensor when the module returned
// one (every layer), and it converts to the whole output as a Value, so a model whose forward
// has optional parameters or several outputs is called the same way:
//
//   Tensor y = (*layer)(x);
//   nn::Value out = (*model)(ids);  // forward(ids, labels = None) -> (logits, loss): out[0], out[1]
//
// When the output is not one Tensor the Tensor side is undefined (using it throws); take it as
// a Value.
class ModuleOutput : public Tensor {
 public:
  explicit ModuleOutput(Value output)
      : Tensor(output.is_tensor() ? output.tensor() : Tensor()), output_(std::move(output)) {}
  const Value& value() const { return output_; }

 private:
  Value output_;
};

inline Value::Value(const ModuleOutput& output) : Value(output.value()) {}

// A keyword argument: (*mha)(q, k, v, nn::kw("need_weights", false)).
struct Kwarg {
  std::string name;
  Value value;
};
inline Kwarg kw(std::string name, Value value) { return {std::move(name), std::move(value)}; }

class Args {
 public:
  Args() = default;
  Args(std::initializer_list<Value> positional) : positional_(positional) {}
  explicit Args(std::vector<Value> positional, std::vector<Kwarg> keywords = {});

  void add(Value v) { positional_.push_back(std::move(v)); }
  void add(Kwarg k);  // a keyword given twice is an Error

  const std::vector<Value>& positional() const { return positional_; }
  const std::vector<Kwarg>& keywords() const { return keywords_; }
  size_t size() const { return positional_.size(); }
  const Value& operator[](size_t i) const;
  // The keyword argument `name`, or nullptr.
  const Value* keyword(std::string_view name) const;

  // Python's binding of a call to a signature: parameter i takes positional argument i or the
  // keyword of its name; the first `required` parameters must be given, the rest default to
  // None. Too many positionals, an unknown or repeated keyword, or a missing required argument
  // is an Error naming `op` and the signature.
  std::vector<Value> bind(const char* op, const std::vector<std::string_view>& parameters, size_t required) const;

  // "(Tensor [2, 8] int64, key_padding_mask=Tensor [2, 8] bool)" for messages.
  std::string describe() const;

 private:
  std::vector<Value> positional_;
  std::vector<Kwarg> keywords_;
};

// Every tensor inside a Value or Args (depth first, in order).
void for_each_tensor(const Value& v, const std::function<void(const Tensor&)>& fn);
void for_each_tensor(const Args& a, const std::function<void(const Tensor&)>& fn);
// The same structure with every tensor replaced by fn(tensor).
Value map_tensors(const Value& v, const std::function<Tensor(const Tensor&)>& fn);
Args map_tensors(const Args& a, const std::function<Tensor(const Tensor&)>& fn);

}  // namespace strider::nn
