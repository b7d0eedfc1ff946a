#include "strider/nn/value.h"

#include <algorithm>
#include <sstream>

namespace strider::nn {

const char* to_string(Value::Kind kind) {
  switch (kind) {
    case Value::Kind::None: return "None";
    case Value::Kind::Tensor: return "Tensor";
    case Value::Kind::Bool: return "bool";
    case Value::Kind::Int: return "int";
    case Value::Kind::Double: return "double";
    case Value::Kind::String: return "string";
    case Value::Kind::List: return "list";
    case Value::Kind::Dict: return "dict";
  }
  return "?";
}

Value::Value(std::vector<Tensor> tensors) {
  auto c = std::make_shared<Composite>();
  c->items.assign(tensors.begin(), tensors.end());
  v_ = std::shared_ptr<const Composite>(std::move(c));
}

Value Value::list(std::vector<Value> items) {
  auto c = std::make_shared<Composite>();
  c->items = std::move(items);
  Value v;
  v.v_ = std::shared_ptr<const Composite>(std::move(c));
  return v;
}

Value Value::dict(std::vector<std::pair<std::string, Value>> items) {
  auto c = std::make_shared<Composite>();
  c->is_dict = true;
  for (auto& [key, value] : items) {
    STRIDER_CHECK(std::find(c->keys.begin(), c->keys.end(), key) == c->keys.end(), "nn::Value::dict",
                  "key '", key, "' appears twice");
    c->keys.push_back(key);
    c->items.push_back(std::move(value));
  }
  Value v;
  v.v_ = std::shared_ptr<const Composite>(std::move(c));
  return v;
}

Value::Kind Value::kind() const {
  switch (v_.index()) {
    case 0: return Kind::None;
    case 1: return Kind::Tensor;
    case 2: return Kind::Bool;
    case 3: return Kind::Int;
    case 4: return Kind::Double;
    case 5: return Kind::String;
    default: return std::get<6>(v_)->is_dict ? Kind::Dict : Kind::List;
  }
}

const Tensor& Value::tensor() const {
  STRIDER_CHECK(kind() == Kind::Tensor, "nn::Value", "expected a Tensor, got ", describe());
  return std::get<Tensor>(v_);
}

Tensor Value::tensor_or_undefined() const { return is_none() ? Tensor() : tensor(); }

bool Value::to_bool() const {
  STRIDER_CHECK(kind() == Kind::Bool, "nn::Value", "expected a bool, got ", describe());
  return std::get<bool>(v_);
}

int64_t Value::to_int() const {
  STRIDER_CHECK(kind() == Kind::Int, "nn::Value", "expected an int, got ", describe());
  return std::get<int64_t>(v_);
}

double Value::to_double() const {
  if (kind() == Kind::Int) return static_cast<double>(std::get<int64_t>(v_));
  STRIDER_CHECK(kind() == Kind::Double, "nn::Value", "expected a double, got ", describe());
  return std::get<double>(v_);
}

const std::string& Value::str() const {
  STRIDER_CHECK(kind() == Kind::String, "nn::Value", "expected a string, got ", describe());
  return std::get<std::string>(v_);
}

const Value::Composite& Value::composite(const char* wanted) const {
  STRIDER_CHECK(v_.index() == 6, "nn::Value", "expected ", wanted, ", got ", describe());
  return *std::get<6>(v_);
}

const std::vector<Value>& Value::items() const { return composite("a list or dict").items; }

const Value& Value::operator[](size_t i) const {
  const Composite& c = composite("a list");
  STRIDER_CHECK(!c.is_dict, "nn::Value", "a dict is indexed by key (at(\"name\")), not by position ", i);
  STRIDER_CHECK(i < c.items.size(), "nn::Value", "index ", i, " is out of range for a list of ", c.items.size());
  return c.items[i];
}

const std::vector<std::string>& Value::keys() const {
  const Composite& c = composite("a dict");
  STRIDER_CHECK(c.is_dict, "nn::Value", "expected a dict, got ", describe());
  return c.keys;
}

bool Value::contains(std::string_view key) const {
  const auto& k = keys();
  return std::find(k.begin(), k.end(), key) != k.end();
}

const Value& Value::at(std::string_view key) const {
  const auto& k = keys();
  auto it = std::find(k.begin(), k.end(), key);
  if (it == k.end()) {
    std::ostringstream names;
    for (const auto& n : k) names << (n == k.front() ? "" : ", ") << n;
    STRIDER_CHECK(false, "nn::Value", "the dict has no key '", key, "' (keys: ", names.str(), ")");
  }
  return items()[static_cast<size_t>(it - k.begin())];
}

std::string Value::describe() const {
  std::ostringstream os;
  switch (kind()) {
    case Kind::Tensor: {
      const Tensor& t = std::get<Tensor>(v_);
      if (!t.defined()) return "undefined Tensor";
      os << "Tensor " << t.sizes() << " " << t.dtype();
      break;
    }
    case Kind::List: os << "list of " << items().size(); break;
    case Kind::Dict: os << "dict of " << items().size(); break;
    case Kind::Bool: os << (std::get<bool>(v_) ? "true" : "false"); break;
    case Kind::Int: os << "int " << std::get<int64_t>(v_); break;
    case Kind::Double: os << "double " << std::get<double>(v_); break;
    case Kind::String: os << "string '" << std::get<std::string>(v_) << "'"; break;
    case Kind::None: os << "None"; break;
  }
  return os.str();
}

Args::Args(std::vector<Value> positional, std::vector<Kwarg> keywords) : positional_(std::move(positional)) {
  for (Kwarg& k : keywords) add(std::move(k));
}

void Args::add(Kwarg k) {
  STRIDER_CHECK(!k.name.empty(), "nn::Args", "a keyword argument needs a name");
  STRIDER_CHECK(keyword(k.name) == nullptr, "nn::Args", "keyword argument '", k.name, "' is given twice");
  keywords_.push_back(std::move(k));
}

const Value& Args::operator[](size_t i) const {
  STRIDER_CHECK(i < positional_.size(), "nn::Args", "argument ", i, " is out of range: the call has ",
                positional_.size(), " positional arguments ", describe());
  return positional_[i];
}

const Value* Args::keyword(std::string_view name) const {
  for (const Kwarg& k : keywords_)
    if (k.name == name) return &k.value;
  return nullptr;
}

std::vector<Value> Args::bind(const char* op, const std::vector<std::string_view>& parameters, size_t required) const {
  auto signature = [&] {
    std::string s = "(";
    for (size_t i = 0; i < parameters.size(); ++i)
      s += (i ? ", " : "") + std::string(parameters[i]) + (i < required ? "" : "=None");
    return s + ")";
  };
  STRIDER_CHECK(positional_.size() <= parameters.size(), op, "takes at most ", parameters.size(),
                " arguments ", signature(), " but was called with ", positional_.size(), " positional: ", describe());
  std::vector<Value> bound(parameters.size());
  std::vector<bool> given(parameters.size(), false);
  for (size_t i = 0; i < positional_.size(); ++i) bound[i] = positional_[i], given[i] = true;
  for (const Kwarg& k : keywords_) {
    auto it = std::find(parameters.begin(), parameters.end(), k.name);
    STRIDER_CHECK(it != parameters.end(), op, "got an unexpected keyword argument '", k.name, "'; the signature is ",
                  signature());
    const auto i = static_cast<size_t>(it - parameters.begin());
    STRIDER_CHECK(!given[i], op, "got argument '", k.name, "' both by position and by keyword");
    bound[i] = k.value;
    given[i] = true;
  }
  for (size_t i = 0; i < required; ++i)
    STRIDER_CHECK(given[i], op, "missing required argument '", parameters[i], "'; the signature is ", signature(),
                  " and the call was ", describe());
  return bound;
}

std::string Args::describe() const {
  std::string s = "(";
  bool first = true;
  for (const Value& v : positional_) s += (first ? "" : ", ") + v.describe(), first = false;
  for (const Kwarg& k : keywords_) s += (first ? "" : ", ") + k.name + "=" + k.value.describe(), first = false;
  return s + ")";
}

void for_each_tensor(const Value& v, const std::function<void(const Tensor&)>& fn) {
  if (v.is_tensor()) {
    fn(v.tensor());
  } else if (v.is_list() || v.is_dict()) {
    for (const Value& item : v.items()) for_each_tensor(item, fn);
  }
}

void for_each_tensor(const Args& a, const std::function<void(const Tensor&)>& fn) {
  for (const Value& v : a.positional()) for_each_tensor(v, fn);
  for (const Kwarg& k : a.keywords()) for_each_tensor(k.value, fn);
}

Value map_tensors(const Value& v, const std::function<Tensor(const Tensor&)>& fn) {
  if (v.is_tensor()) return Value(fn(v.tensor()));
  if (v.is_list()) {
    std::vector<Value> items;
    for (const Value& item : v.items()) items.push_back(map_tensors(item, fn));
    return Value::list(std::move(items));
  }
  if (v.is_dict()) {
    std::vector<std::pair<std::string, Value>> items;
    for (size_t i = 0; i < v.size(); ++i) items.emplace_back(v.keys()[i], map_tensors(v.items()[i], fn));
    return Value::dict(std::move(items));
  }
  return v;
}

Args map_tensors(const Args& a, const std::function<Tensor(const Tensor&)>& fn) {
  std::vector<Value> positional;
  std::vector<Kwarg> keywords;
  for (const Value& v : a.positional()) positional.push_back(map_tensors(v, fn));
  for (const Kwarg& k : a.keywords()) keywords.push_back({k.name, map_tensors(k.value, fn)});
  return Args(std::move(positional), std::move(keywords));
}

}  // namespace strider::nn
