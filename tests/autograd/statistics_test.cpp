// std, logsumexp, vector norms, chunk and unbind against PyTorch 1.13 (values and gradients of
// sum(y * w), generated once from x = sin(0.37 * arange(24)).reshape(2, 3, 4) in float64), float64
// gradchecks, and PyTorch's gradients where the chain rule would give 0 / 0.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <strider/strider.h>

#include "support/compare.h"
#include "support/gradcheck.h"
#include "support/golden_values.h"

namespace strider {
namespace {

using V = std::vector<Tensor>;
using testing::from_values;

using testing::sine_input;

struct Golden {
  const char* name;
  std::vector<int64_t> shape;
  std::vector<double> value, grad;
};

const Golden kGolden[] = {
  {"std_d1", {2, 4}, {0.5305787106871999, 0.574471767828537, 0.7330538605812025, 0.8916877549184624, 0.9494190585173257, 0.9958641467974175, 0.9459467303864999, 0.8132075889416918}, {0.36955783334141956, 0.013443265865073887, -0.20319090769868006, -0.28570097814312884, -0.5689276585168815, -0.4630948981999466, -0.2720889132377476, -0.1316666565159682, 0.19936982517546192, 0.44965163233487265, 0.47527982093642773, 0.41736763465909704, 0.28274915280562135, 0.2831930476455034, 0.2622856409327614, 0.225372546841737, 0.07396791976175991, -0.0011723514657040663, -0.05638958134132748, -0.09907802208384466, -0.3567170725673812, -0.28202069617979936, -0.20589605959143398, -0.12629452475789235}},
  {"std_all", {}, {0.7076459790590923}, {0.012026299870805657, -0.010191603644082007, -0.02940241814712674, -0.04300605001734629, -0.049161311498628436, -0.0470351168251186, -0.03691523647144624, -0.020171348768976027, 0.0009303396308907526, 0.02353381419572742, 0.04457980068087601, 0.06121982354675746, 0.0712017337603508, 0.07317452660150386, 0.06687119381395615, 0.05314486192023139, 0.0338533255490114, 0.011607603647452554, -0.010581449684468232, -0.029710650171830257, -0.04319095026780527, -0.049197854593349535, -0.04691835682766273, -0.036660976299723154}},
  {"std_d02_c0_keep", {1, 3, 1}, {0.7275861477995544, 0.4431997827612488, 0.6774567075417257}, {-0.03411658426502159, -0.09624246328611741, -0.14995989602738133, -0.18799847996715213, -0.12845006420765043, -0.11953860470098225, -0.0771234368390443, -0.006945254613402372, 0.01648114981032279, 0.07255667030107925, 0.12476831780734667, 0.16604949077506265, 0.13135023596755882, 0.13686657504523256, 0.11924114562852389, 0.08085946690435718, 0.21948683250632572, 0.12624896845171713, 0.03324861776779003, -0.04692705836475351, -0.09297654832790202, -0.10787869470486128, -0.10222363387331751, -0.07677675178773057}},
  {"lse_d2", {2, 3}, {1.9238584953146116, 2.2223389275485523, 1.120002442471111, 0.514617429138947, 1.6341547687436724, 2.300979924264405}, {-0.14604236979279536, -0.20966525091827937, -0.28662785311315775, -0.35766452617576777, -0.26782275981845877, -0.258713113062119, -0.21942490279162272, -0.16708270258866906, -0.3228842395963463, -0.223498105208957, -0.15867553531438666, -0.1210290764020491, -0.16863321778027485, -0.16330459732300145, -0.1809479278687788, -0.2262446918105535, -0.08920195313008931, -0.12812048823362296, -0.1838494113567465, -0.2510020603230195, -0.13906460259934159, -0.15334742687459896, -0.14776236332957515, -0.1250429985008321}},
  {"lse_d01_keep", {1, 1, 4}, {2.1334748991084767, 2.1933354974922445, 2.222856133476623, 2.2278910935638256}, {-0.11842506289125253, -0.14621284978053242, -0.17558650375691323, -0.19505508370760055, -0.32058941532074436, -0.26632655501288377, -0.19842464005776392, -0.13450853512845773, -0.14186510591614762, -0.08444946767004322, -0.05266798458619667, -0.03576309627289483, -0.045202366845255956, -0.03764530244916025, -0.03664204052041386, -0.04078618643318969, -0.08301545704248808, -0.10254099228472793, -0.1292572260430071, -0.1571008515516436, -0.29090259198411134, -0.2758683110635221, -0.23350856155744448, -0.17591668168882227}},
  {"norm2_all", {}, {3.5266229036139904}, {-0.0, -0.10253872950078899, -0.19119932299457154, -0.25398198507761044, -0.2823893769637484, -0.2725766914262963, -0.22587202941935963, -0.14859664784410298, -0.05120940708153475, 0.05310878669533069, 0.15023895533756423, 0.2270349861776589, 0.2731028967078746, 0.2822076113522846, 0.25311684969591525, 0.18976790985802383, 0.10073477366235788, -0.0019323415803222713, -0.10433792345512995, -0.1926218568616115, -0.2548353255718536, -0.2825580284525001, -0.272037827721734, -0.22469858319597194}},
  {"norm1_d1", {2, 4}, {1.176477112431873, 1.510185298483165, 2.000689524772725, 2.2204098095431415, 2.217092586372986, 1.9985300805845334, 2.2199830238934832, 2.1409716793296054}, {-0.0, -0.9130434782608696, -0.8260869565217391, -0.7391304347826086, -1.0, -0.9130434782608696, -0.8260869565217391, -0.7391304347826086, -1.0, 0.9130434782608696, 0.8260869565217391, 0.7391304347826086, 0.6521739130434783, 0.5652173913043479, 0.4782608695652174, 0.391304347826087, 0.6521739130434783, -0.5652173913043479, -0.4782608695652174, -0.391304347826087, -0.6521739130434783, -0.5652173913043479, -0.4782608695652174, -0.391304347826087}},
  {"norminf_d2", {2, 3}, {0.8956986856800476, 0.99588084453764, 0.8006667821758177, 0.9952398257691626, 0.6793046521448148, 0.9964756147406005}, {-0.0, -0.0, -0.0, -1.0, -0.9130434782608696, -0.0, -0.0, -0.0, -0.0, 0.0, 0.0, 0.8260869565217391, 0.0, 0.7391304347826086, 0.0, 0.0, 0.0, -0.0, -0.0, -0.6521739130434783, -0.0, -0.5652173913043479, -0.0, -0.0}},
  {"normninf_d2", {2, 3}, {0.0, 0.5240443416872761, 0.18059626789423291, 0.669239857276262, 0.006814640074770176, 0.7924271699085284}, {-0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.0, -0.9130434782608696, -0.8260869565217391, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.7391304347826086, 0.0, -0.6521739130434783, -0.0, -0.0, -0.0, -0.0, -0.0, -0.5652173913043479}},
  {"norm0_d0", {3, 4}, {1.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0, 2.0}, {0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0}},
  {"norm3_d02_keep", {1, 3, 1}, {1.5824497393155874, 1.4315020935427563, 1.5564305628588604}, {-0.0, -0.05221966257104965, -0.18156448305447617, -0.32037898680649307, -0.4418982091865946, -0.4117209465257921, -0.28271603345220403, -0.1223611516600295, -0.011122023459642066, 0.011962365601091126, 0.09573030049073152, 0.21860993064069578, 0.37043397360051966, 0.39554476658266086, 0.31820009892423734, 0.17885609543982606, 0.05623210756491176, -2.0691564515098057e-05, -0.060326747254170573, -0.20560641531017948, -0.2754251358776703, -0.3386098716181103, -0.31386501403470835, -0.214133679663101}},
};

Tensor case_of(const std::string& name, const Tensor& x) {
  const double inf = std::numeric_limits<double>::infinity();
  if (name == "std_d1") return std(x, {1});
  if (name == "std_all") return std(x);
  if (name == "std_d02_c0_keep") return std(x, {0, 2}, 0, true);
  if (name == "lse_d2") return logsumexp(x, {2});
  if (name == "lse_d01_keep") return logsumexp(x, {0, 1}, true);
  if (name == "norm2_all") return norm(x);
  if (name == "norm1_d1") return norm(x, 1, {1});
  if (name == "norminf_d2") return norm(x, inf, {2});
  if (name == "normninf_d2") return norm(x, -inf, {2});
  if (name == "norm0_d0") return norm(x, 0, {0});
  if (name == "norm3_d02_keep") return norm(x, 3, {0, 2}, true);
  throw Error("unknown case " + name);
}

TEST(Statistics, ValuesAndGradientsArePyTorchs) {
  for (const Golden& c : kGolden) {
    SCOPED_TRACE(c.name);
    Tensor x = sine_input().requires_grad_(true);
    Tensor y = case_of(c.name, x);
    ASSERT_EQ(y.sizes(), IntArrayRef(c.shape));
    EXPECT_TRUE(y.is_contiguous());
    EXPECT_TRUE(testing::all_close(y, from_values(c.value, c.shape), 1e-12, 1e-12));
    Tensor w = (arange(0, 24, 1, kDouble) * (2.0 / 23) - 1.0).narrow(0, 0, y.numel()).reshape(y.sizes());  // linspace(-1, 1, 24)
    (y * w).sum().backward();
    EXPECT_TRUE(testing::all_close(x.grad(), from_values(c.grad, {2, 3, 4}), 1e-12, 1e-12));
  }
}

TEST(Statistics, Gradchecks) {
  const Tensor a = (sine_input() + 0.05).requires_grad_(true);  // no ties among |x| for the infinity norms
  for (const Golden& c : kGolden) {
    if (std::string(c.name) == "norm0_d0") continue;  // piecewise constant
    EXPECT_TRUE(testing::gradcheck([&](const V& x) { return case_of(c.name, x[0]); }, {a})) << c.name;
  }
}

// Where the composition's chain rule gives 0 / 0, PyTorch defines the gradient: 0 for a zero norm
// or deviation; NaN for logsumexp over -infs; 0 beside an infinite element.
TEST(Statistics, GradientsAtTheEdgesArePyTorchs) {
  const double inf = std::numeric_limits<double>::infinity();
  Tensor z = zeros({3}, kDouble).requires_grad_(true);
  norm(z).backward();
  EXPECT_TRUE(testing::all_close(z.grad(), zeros({3}, kDouble), 0, 0));
  Tensor c = full({3}, 2.0, TensorOptions().dtype(kDouble)).requires_grad_(true);
  std(c).backward();
  EXPECT_TRUE(testing::all_close(c.grad(), zeros({3}, kDouble), 0, 0));
  Tensor all_minus = full({2}, -inf, TensorOptions().dtype(kDouble)).requires_grad_(true);
  Tensor y = logsumexp(all_minus, {0});
  EXPECT_EQ(y.item<double>(), -inf);
  y.backward();
  EXPECT_TRUE(std::isnan(all_minus.grad().sum().item<double>()));
  Tensor with_inf = from_values({inf, 1.0}, {2}).requires_grad_(true);
  Tensor yi = logsumexp(with_inf, {0});
  EXPECT_EQ(yi.item<double>(), inf);
  yi.backward();
  EXPECT_EQ(with_inf.grad().select(0, 1).item<double>(), 0.0);
  EXPECT_EQ(logsumexp(empty({0, 3}), {0}).sum().item<float>(), -std::numeric_limits<float>::infinity());
  EXPECT_NEAR(logsumexp(arange(1, 4, 1, kLong), {0}).item<float>(), 3.4076059f, 1e-6);
  EXPECT_TRUE(std::isnan(std(ones({1})).item<float>()));
  EXPECT_EQ(norm(empty({0})).item<float>(), 0.0f);
  EXPECT_THROW(norm(arange(0, 3, 1, kLong)), Error);
}

// A 0-d input reduced over dim 0 or -1 is itself (the graph's recording indexed past its dims);
// bfloat16's deviation is the root of the float32 variance, rounded once; norms of p < 2 give
// PyTorch's gradient at zero elements (NaN from |0|^(p-2) before).
TEST(Statistics, ZeroDimBFloat16AndFractionalNormsArePyTorchs) {
  for (int64_t dim : {0, -1}) {
    Tensor x = full({}, 1.5, TensorOptions().dtype(kDouble)).requires_grad_(true);
    Tensor y = sum(x, {dim}) + mean(x, {dim}) + logsumexp(x, {dim}) + norm(x, 2, {dim});
    EXPECT_EQ(y.dim(), 0);
    EXPECT_NEAR(y.item<double>(), 6.0, 1e-12);
    y.backward();
    EXPECT_NEAR(x.grad().item<double>(), 4.0, 1e-12);
  }
  EXPECT_EQ(std(from_values({1, 2, 3, 5, 8}, {5}).to(kBFloat16)).item<float>(), 2.78125f);  // PyTorch's
  // PyTorch 1.13: x = [0, 1, -2]: p = 1.5 -> [0, 0.6392, -0.9040]; p = 0.5 -> [0, 2.4142, -1.7071].
  const std::pair<double, std::vector<double>> cases[] = {{1.5, {0, 0.6392, -0.9040}}, {0.5, {0, 2.4142, -1.7071}}};
  for (const auto& [p, want] : cases) {
    Tensor x = from_values({0, 1, -2}, {3}).requires_grad_(true);
    norm(x, p).backward();
    EXPECT_TRUE(testing::all_close(x.grad(), from_values(want, {3}), 0, 1e-4)) << p;
  }
  Tensor z = zeros({3}, kDouble).requires_grad_(true);
  norm(z, 0.5).backward();
  EXPECT_TRUE(testing::all_close(z.grad(), zeros({3}, kDouble), 0, 0));
}

TEST(Statistics, ChunkAndUnbindAreViewsWithOneBackward) {
  auto sizes = [](const std::vector<Tensor>& v) {
    std::vector<int64_t> out;
    for (const Tensor& t : v) out.push_back(t.size(0));
    return out;
  };
  EXPECT_EQ(sizes(chunk(arange(0, 5, 1, kFloat), 3)), (std::vector<int64_t>{2, 2, 1}));
  EXPECT_EQ(sizes(chunk(arange(0, 6, 1, kFloat), 4)), (std::vector<int64_t>{2, 2, 2}));  // as torch.chunk
  EXPECT_EQ(sizes(chunk(empty({0}), 3)), (std::vector<int64_t>{0, 0, 0}));
  EXPECT_THROW(chunk(ones({3}), 0), Error);
  Tensor x = randn({2, 3, 4, 5}, kDouble).contiguous(MemoryFormat::ChannelsLast).requires_grad_(true);
  auto parts = unbind(x, 1);
  ASSERT_EQ(parts.size(), 3u);
  EXPECT_EQ(parts[0].strides(), IntArrayRef({60, 15, 3}));  // PyTorch's view of the channels-last storage
  (parts[0] * 2.0 + parts[2]).sum().backward();
  EXPECT_TRUE(testing::all_close(x.grad().select(1, 1), zeros({2, 4, 5}, kDouble), 0, 0));
  EXPECT_TRUE(testing::all_close(x.grad().select(1, 0), full({2, 4, 5}, 2.0, TensorOptions().dtype(kDouble)), 0, 0));
  EXPECT_TRUE(testing::gradcheck([](const V& v) { return chunk(v[0], 2, 1)[1] * 3.0; }, {randn({2, 5}, kDouble).requires_grad_(true)}));
  EXPECT_TRUE(testing::gradcheck([](const V& v) { return unbind(v[0], 0)[1]; }, {randn({3, 2}, kDouble).requires_grad_(true)}));
}

}  // namespace
}  // namespace strider
