// Modules with several inputs and outputs: Value, Args, bind_forward, hooks on them, and the
// containers.
#include "support/compare.h"

namespace strider {
namespace {

using testing::all_close;

// Two inputs (one optional), a keyword, two outputs: logits and, with labels, a loss.
class Classifier : public nn::Module {
 public:
  Classifier() : Module("Classifier") {
    embed_ = register_module("embed", std::make_shared<nn::Embedding>(10, 4));
    head_ = register_module("head", std::make_shared<nn::Linear>(4, 3));
  }
  using nn::Module::forward;
  std::tuple<Tensor, Tensor> forward(const Tensor& ids, const Tensor& mask, std::optional<Tensor> labels, double scale) {
    Tensor keep = logical_not(mask).to(kFloat).unsqueeze(-1);  // [N, T, 1]
    Tensor pooled = sum((*embed_)(ids) * keep, {1}) / sum(keep, {1});
    Tensor logits = (*head_)(pooled) * scale;
    Tensor loss = labels ? nn::functional::cross_entropy(logits, *labels) : Tensor();
    return {logits, loss};
  }
  nn::Value forward_args(const nn::Args& args) override {
    return nn::bind_forward(args, {"ids", "mask", "labels", "scale"},
                            [this](const Tensor& ids, const Tensor& mask, std::optional<Tensor> labels,
                                   std::optional<double> scale) {
                              auto [logits, loss] = forward(ids, mask, labels, scale.value_or(1.0));
                              return nn::Value::list({logits, loss.defined() ? nn::Value(loss) : nn::Value()});
                            });
  }

 private:
  std::shared_ptr<nn::Module> embed_, head_;
};

Tensor ids() { return tensor(std::vector<int64_t>{1, 4, 2, 9, 0, 3, 7, 7, 5, 1, 8, 6}).reshape({2, 6}); }
Tensor mask() {
  Tensor m = zeros({2, 6}, kBool);
  m.narrow(1, 4, 2).fill_(1);
  return m;
}

TEST(Value, KindsAndAccessors) {
  nn::Value none;
  EXPECT_TRUE(none.is_none());
  EXPECT_EQ(nn::Value(3).to_int(), 3);
  EXPECT_EQ(nn::Value(int64_t{4}).to_double(), 4.0);
  EXPECT_TRUE(nn::Value(true).to_bool());
  EXPECT_EQ(nn::Value("x").str(), "x");
  nn::Value d = nn::Value::dict({{"logits", ones({2})}, {"n", 2}});
  EXPECT_TRUE(d.contains("logits"));
  EXPECT_EQ(d.at("n").to_int(), 2);
  EXPECT_EQ(d.keys(), (std::vector<std::string>{"logits", "n"}));
  nn::Value l = nn::Value::list({ones({1}), nn::Value(), d});
  EXPECT_EQ(l.size(), 3u);
  int tensors = 0;
  nn::for_each_tensor(l, [&](const Tensor&) { ++tensors; });
  EXPECT_EQ(tensors, 2);
  nn::Value doubled = nn::map_tensors(l, [](const Tensor& t) { return t * 2.0; });
  EXPECT_EQ(doubled[2].at("logits").tensor().sum().item<float>(), 4.0f);
  EXPECT_TRUE(doubled[1].is_none());
}

TEST(Value, WrongKindNamesWhatItFound) {
  try {
    nn::Value::list({ones({2})}).tensor();
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("expected a Tensor, got list of 1"), std::string::npos) << e.what();
  }
  EXPECT_THROW(nn::Value(1.5).to_int(), Error);
  EXPECT_THROW(nn::Value::dict({{"a", 1}}).at("b"), Error);
  EXPECT_THROW(nn::Value::dict({{"a", 1}, {"a", 2}}), Error);
  EXPECT_THROW(nn::Value::list({})[0], Error);
}

TEST(Args, BindsByPositionAndKeyword) {
  nn::Args a(std::vector<nn::Value>{ones({1})}, {{"c", 3}});
  auto bound = a.bind("op", {"a", "b", "c"}, 1);
  EXPECT_TRUE(bound[0].is_tensor());
  EXPECT_TRUE(bound[1].is_none());
  EXPECT_EQ(bound[2].to_int(), 3);
}

TEST(Args, BindingErrorsNameTheSignature) {
  auto message = [](const nn::Args& a) {
    try {
      a.bind("Classifier", {"ids", "mask"}, 2);
    } catch (const Error& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  EXPECT_NE(message(nn::Args{ones({1})}).find("missing required argument 'mask'; the signature is (ids, mask)"),
            std::string::npos);
  EXPECT_NE(message(nn::Args{1, 2, 3}).find("takes at most 2 arguments"), std::string::npos);
  EXPECT_NE(message(nn::Args(std::vector<nn::Value>{1, 2}, {{"typo", 1}})).find("unexpected keyword argument 'typo'"),
            std::string::npos);
  EXPECT_NE(message(nn::Args(std::vector<nn::Value>{1, 2}, {{"mask", 1}})).find("both by position and by keyword"),
            std::string::npos);
  nn::Args twice;
  twice.add(nn::kw("x", 1));
  EXPECT_THROW(twice.add(nn::kw("x", 2)), Error);
}

TEST(MultiInputModule, PositionalKeywordsAndOutputs) {
  manual_seed(0);
  auto m = std::make_shared<Classifier>();
  Tensor labels = tensor(std::vector<int64_t>{0, 2});
  nn::Value out = (*m)(ids(), mask(), nn::kw("labels", labels));
  ASSERT_TRUE(out.is_list());
  EXPECT_EQ(out[0].tensor().sizes(), IntArrayRef({2, 3}));
  ASSERT_TRUE(out[1].is_tensor());
  out[1].tensor().backward();
  EXPECT_TRUE(m->named_parameters()[0].second.grad().defined());
  // Without labels the loss is None; a keyword scale reaches the typed forward.
  nn::Value plain = (*m)(ids(), nn::kw("mask", mask()), nn::kw("scale", 2.0));
  EXPECT_TRUE(plain[1].is_none());
  EXPECT_TRUE(all_close(plain[0].tensor(), out[0].tensor() * 2.0, 1e-6, 1e-6));
}

TEST(MultiInputModule, ErrorsCarryTheModuleChain) {
  auto outer = std::make_shared<nn::Sequential>();
  auto m = std::make_shared<Classifier>();
  try {
    (*m)(ids());  // mask missing
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("in Classifier"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("missing required argument 'mask'"), std::string::npos) << e.what();
  }
  // The single-tensor call of a module returning a list says so.
  auto list_module = std::make_shared<Classifier>();
  EXPECT_THROW((*list_module)(nn::Value(ids())), Error);
  EXPECT_THROW((*std::make_shared<nn::ReLU>())(ones({2}), ones({2})), Error) << "ReLU takes one tensor";
}

TEST(MultiInputModule, HooksSeeAndReplaceArgsAndOutputs) {
  auto m = std::make_shared<Classifier>();
  std::string seen;
  m->register_forward_pre_hook([&](nn::Module&, const nn::Args& a) -> std::optional<nn::Args> {
    seen = a.describe();
    nn::Args replaced(a.positional(), {});
    replaced.add(nn::kw("scale", 0.0));  // every logit becomes 0
    for (const auto& k : a.keywords())
      if (k.name != "scale") replaced.add(k);
    return replaced;
  });
  int outputs = 0;
  m->register_forward_hook([&](nn::Module&, const nn::Args& a, const nn::Value& out) -> std::optional<nn::Value> {
    EXPECT_TRUE(a.keyword("scale"));
    nn::for_each_tensor(out, [&](const Tensor&) { ++outputs; });
    return nn::Value::dict({{"logits", out[0]}});
  });
  nn::Value out = (*m)(ids(), mask(), nn::kw("scale", 5.0));
  EXPECT_NE(seen.find("scale=double 5"), std::string::npos) << seen;
  EXPECT_EQ(outputs, 1);
  EXPECT_EQ(out.at("logits").tensor().abs().sum().item<float>(), 0.0f);
}

TEST(Containers, ModuleListAndDictHoldAnySignature) {
  auto dict = std::make_shared<nn::ModuleDict>();
  dict->insert("cls", std::make_shared<Classifier>());
  dict->insert("act", std::make_shared<nn::ReLU>());
  EXPECT_EQ(dict->keys(), (std::vector<std::string>{"cls", "act"}));
  EXPECT_TRUE(dict->contains("act"));
  EXPECT_THROW(dict->insert("act", std::make_shared<nn::ReLU>()), Error);
  try {
    (*dict)["nope"];
    FAIL();
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("keys: cls, act"), std::string::npos) << e.what();
  }
  nn::Value out = (*(*dict)["cls"])(ids(), mask());
  EXPECT_EQ(out[0].tensor().sizes(), IntArrayRef({2, 3}));
  EXPECT_EQ(dict->state_dict().count("cls.head.weight"), 1u);

  nn::ModuleList list{std::make_shared<nn::ReLU>(), std::make_shared<Classifier>()};
  EXPECT_EQ(list.size(), 2u);
  EXPECT_THROW(list[2], Error);
  EXPECT_EQ(list.state_dict().count("1.embed.weight"), 1u);
}

}  // namespace
}  // namespace strider
