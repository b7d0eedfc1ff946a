// The flag table is the only list of `strider train`'s flags: every TrainOptions member has one
// row, every row is an option of the parser, and every flag the ranks must agree on shows in
// the description they compare.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>
#include <type_traits>

#include <strider/strider.h>

#include "train_flags.h"

namespace strider::tools {
namespace {

// Converts to any member's type, so T{AnyValue{}, ...} is valid up to T's member count.
struct AnyValue {
  template <class T>
  operator T() const;
};

template <class T, class... Given>
constexpr size_t member_count() {
  if constexpr (requires { T{Given{}..., AnyValue{}}; }) return member_count<T, Given..., AnyValue>();
  else return sizeof...(Given);
}

// A different value of the member the row sets.
void change(TrainOptions& o, const OptionMember& member) {
  std::visit(
      [&](auto m) {
        auto& v = o.*m;
        using T = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<T, std::string>) v += "x";
        else if constexpr (std::is_same_v<T, bool>) v = !v;
        else if constexpr (std::is_same_v<T, double>) v = v * 2 + 1;
        else v += 1;
      },
      member);
}

void parse(CLI::App& app, std::vector<std::string> args) {
  std::reverse(args.begin(), args.end());  // CLI11 takes them last first
  app.parse(args);
}

TEST(TrainFlagsTest, EveryOptionIsOneRow) {
  const auto& flags = train_flags();
  EXPECT_EQ(member_count<TrainOptions>(), flags.size()) << "a TrainOptions member has no row in train_flags.cpp";
  std::set<std::string> names;
  for (size_t i = 0; i < flags.size(); ++i) {
    EXPECT_TRUE(names.insert(flags[i].name).second) << flags[i].name << " has two rows";
    EXPECT_EQ(flags[i].name.rfind("--", 0), 0u) << flags[i].name;
    EXPECT_FALSE(flags[i].help.empty()) << flags[i].name << " has no help";
    for (size_t j = 0; j < i; ++j)
      EXPECT_FALSE(flags[i].member == flags[j].member)
          << flags[i].name << " and " << flags[j].name << " set one member";
  }
}

TEST(TrainFlagsTest, EveryAgreedFlagChangesTheDescription) {
  const std::vector<std::string> base = describe_for_ranks({});
  for (const TrainFlag& f : train_flags()) {
    TrainOptions o;
    change(o, f.member);
    const std::vector<std::string> changed = describe_for_ranks(o);
    if (f.ranks == AcrossRanks::Local) {
      EXPECT_EQ(changed, base) << f.name << " is local to a rank, yet described";
      continue;
    }
    ASSERT_EQ(changed.size(), base.size());
    int differing = 0;
    for (size_t i = 0; i < base.size(); ++i) {
      if (changed[i] == base[i]) continue;
      ++differing;
      EXPECT_EQ(changed[i].rfind(f.name + " ", 0), 0u) << "changing " << f.name << " changed '" << changed[i] << "'";
    }
    EXPECT_EQ(differing, 1) << "changing " << f.name << " changed " << differing << " lines of the description";
  }
}

TEST(TrainFlagsTest, PathsAgreeOnlyOnWhetherGiven) {
  TrainOptions a, b;
  a.resume = "/mnt/a/run";
  b.resume = "/data/run";
  EXPECT_EQ(describe_for_ranks(a), describe_for_ranks(b));
  const auto lines = describe_for_ranks(a);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "--resume yes"), lines.end());
}

TEST(TrainFlagsTest, EveryRowIsAnOptionOfTheParser) {
  TrainOptions o;
  CLI::App app;
  add_train_flags(app, o);
  for (const TrainFlag& f : train_flags()) EXPECT_NE(app.get_option_no_throw(f.name), nullptr) << f.name;
  parse(app, {"--lr", "0.5", "--seq", "7", "--json", "--no-progress", "--fsdp", "hybrid_shard", "--resume", "/r",
              "--seed", "9", "--collective-timeout", "2.5"});
  EXPECT_EQ(o.lr, 0.5);
  EXPECT_EQ(o.seq, 7);
  EXPECT_TRUE(o.json);
  EXPECT_FALSE(o.progress);
  EXPECT_EQ(o.fsdp, "hybrid_shard");
  EXPECT_EQ(o.resume, "/r");
  EXPECT_EQ(o.seed, 9u);
  EXPECT_EQ(o.collective_timeout, 2.5);
}

TEST(TrainFlagsTest, ChecksComeFromTheTable) {
  for (const std::vector<std::string>& bad : std::vector<std::vector<std::string>>{
           {"--fsdp", "zero3"}, {"--threads", "0"}, {"--optimizer", "adagrad"}, {"--model", "mlp"}, {"--lr", "0"}}) {
    TrainOptions o;
    CLI::App app;
    add_train_flags(app, o);
    EXPECT_THROW(parse(app, bad), CLI::ValidationError) << bad[0] << " " << bad[1];
  }
}

TEST(TrainFlagsTest, StrategiesComeFromThePlan) {
  const std::vector<std::string> names = fsdp::strategy_names();
  EXPECT_EQ(names.size(), 6u);
  for (const std::string& name : names) {
    EXPECT_EQ(fsdp::to_string(fsdp::parse_sharding_strategy(name)), name);
    TrainOptions o;
    CLI::App app;
    add_train_flags(app, o);
    parse(app, {"--fsdp", name});
    EXPECT_EQ(o.fsdp, name);
  }
}

TEST(TrainFlagsTest, GptDefaultsOnlyForFlagsNotGiven) {
  TrainOptions o;
  CLI::App app;
  add_train_flags(app, o);
  parse(app, {"--model", "gpt", "--lr", "0.5"});
  apply_model_defaults(app, o);
  EXPECT_EQ(o.optimizer, "adamw");
  EXPECT_EQ(o.lr, 0.5);
  EXPECT_EQ(o.weight_decay, 0.01);
}

}  // namespace
}  // namespace strider::tools
