#include "train.h"

#include <omp.h>
#include <unistd.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>

#include <nlohmann/json.hpp>
#include <strider/strider.h>

#include "svg_plot.h"

namespace strider::tools {
namespace {

using Clock = std::chrono::steady_clock;
namespace F = nn::functional;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

std::shared_ptr<nn::Module> make_model(const std::string& name) {
  if (name == "fmnist_resnet") return models::fmnist_resnet(10, 1);
  if (name == "small_cnn") return models::small_cnn(10, 1);
  if (name == "resnet18") return models::resnet18(10, 1);
  STRIDER_CHECK(false, "train", "unknown model '", name, "'; use fmnist_resnet, small_cnn or resnet18");
  return nullptr;
}

double evaluate(nn::Module& model, io::DataLoader& loader, ScalarType dtype) {
  NoGradGuard g;
  model.eval();
  int64_t correct = 0, total = 0;
  loader.start_epoch(0);
  while (auto b = loader.next()) {
    Tensor logits;
    if (dtype == kBFloat16) {
      nn::CastParameters cast(model, kBFloat16);
      logits = model(b->input);
    } else {
      logits = model(b->input);
    }
    correct += sum(eq(argmax(logits.to(kFloat), 1), b->target)).item<int64_t>();
    total += b->target.numel();
  }
  model.train();
  return total ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
}

void print_progress(int64_t epoch, int64_t epochs, int64_t step, int64_t steps, double loss, double img_s,
                    double eta, bool tty) {
  const int width = 24;
  const int filled = steps ? static_cast<int>(width * step / steps) : width;
  std::fprintf(stderr, "%sepoch %lld/%lld [%s%s] %lld/%lld loss %.4f  %.0f img/s  ETA %02d:%02d%s",
               tty ? "\r" : "", static_cast<long long>(epoch), static_cast<long long>(epochs),
               std::string(filled, '#').c_str(), std::string(width - filled, '.').c_str(),
               static_cast<long long>(step), static_cast<long long>(steps), loss, img_s,
               static_cast<int>(eta) / 60, static_cast<int>(eta) % 60, tty ? "   " : "\n");
  std::fflush(stderr);
}

void save_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& opt, const TrainOptions& o,
                     int64_t epoch) {
  io::TensorMap t;
  for (auto& [n, v] : model.state_dict()) t["model." + n] = v;
  for (auto& [pname, st] : opt.state())
    for (auto& [k, v] : st) t["optim." + pname + "." + k] = v;
  io::save_safetensors(path, t, {{"model", o.model}, {"epoch", std::to_string(epoch)},
                                 {"optimizer", o.optimizer}, {"optimizer_steps", std::to_string(opt.step_count())}});
}

int64_t load_checkpoint(const std::string& path, nn::Module& model, optim::Optimizer& opt, const TrainOptions& o) {
  io::SafetensorsFile f = io::load_safetensors(path);
  STRIDER_CHECK(f.metadata["model"] == o.model, "train", "checkpoint ", path, " holds a '", f.metadata["model"],
                "' model, not '", o.model, "'");
  std::map<std::string, Tensor> model_state;
  for (auto& [n, v] : f.tensors) {
    if (n.rfind("model.", 0) == 0) model_state[n.substr(6)] = v;
    if (n.rfind("optim.", 0) == 0) {
      const std::string rest = n.substr(6);
      const size_t dot = rest.rfind('.');
      Tensor v_layout;
      for (auto& [pn, p] : opt.params())
        if (pn == rest.substr(0, dot)) v_layout = empty_like(p);
      STRIDER_CHECK(v_layout.defined(), "train", "checkpoint has optimizer state for unknown parameter '", rest, "'");
      v_layout.copy_(v);
      opt.state()[rest.substr(0, dot)][rest.substr(dot + 1)] = v_layout;
    }
  }
  model.load_state_dict(model_state);
  opt.set_step_count(std::stoll(f.metadata["optimizer_steps"]));
  return std::stoll(f.metadata["epoch"]);
}

}  // namespace

int run_train(const TrainOptions& o) {
  if (o.threads > 0) omp_set_num_threads(o.threads);
  manual_seed(o.seed);
  const MemoryFormat fmt = memory_format_from_string(o.memory_format);
  const ScalarType dtype = scalar_type_from_string(o.dtype);
  STRIDER_CHECK(dtype == kFloat || dtype == kBFloat16, "train", "--dtype must be float32 or bfloat16");
  STRIDER_CHECK(o.epochs > 0 && o.batch_size > 0 && o.lr > 0, "train", "epochs, batch size and lr must be positive");
  std::filesystem::create_directories(o.out_dir);

  // Fashion-MNIST's pixel statistics.
  io::DataLoaderOptions lo{.batch_size = o.batch_size, .shuffle = true, .seed = o.seed, .drop_last = true,
                           .mean = 0.2860, .std = 0.3530, .dtype = dtype, .memory_format = fmt};
  io::DataLoader train(io::load_fashion_mnist(o.data_dir, "train"), lo);
  io::DataLoaderOptions to = lo;
  to.batch_size = 1000;
  to.shuffle = false;
  to.drop_last = false;
  io::DataLoader test(io::load_fashion_mnist(o.data_dir, "test"), to);

  auto model = make_model(o.model);
  model->to(fmt);
  std::unique_ptr<optim::Optimizer> opt;
  if (o.optimizer == "sgd") {
    opt = std::make_unique<optim::SGD>(model->named_parameters(),
                                       optim::SGDOptions{.lr = o.lr, .momentum = 0.9, .weight_decay = o.weight_decay, .nesterov = true});
  } else {
    STRIDER_CHECK(o.optimizer == "adamw", "train", "unknown optimizer '", o.optimizer, "'; use sgd or adamw");
    opt = std::make_unique<optim::AdamW>(model->named_parameters(), optim::AdamOptions{.lr = o.lr, .weight_decay = o.weight_decay});
  }
  const int64_t steps_per_epoch = o.limit_batches > 0 ? std::min(o.limit_batches, train.batches_per_epoch())
                                                      : train.batches_per_epoch();
  const int64_t total_steps = steps_per_epoch * o.epochs;
  optim::CosineWithWarmup sched(*opt, std::min<int64_t>(steps_per_epoch / 2, 200), total_steps);
  int64_t start_epoch = 0;
  if (!o.resume.empty()) {
    start_epoch = load_checkpoint(o.resume, *model, *opt, o);
    for (int64_t i = 0; i < start_epoch * steps_per_epoch; ++i) sched.step();
  }

  const bool tty = o.progress && ::isatty(STDERR_FILENO);
  std::ofstream metrics(o.out_dir + "/metrics.jsonl", o.resume.empty() ? std::ios::trunc : std::ios::app);
  Series loss_curve{"training loss", "step", "loss", {}}, acc_curve{"test accuracy", "epoch", "accuracy", {}};
  const auto t0 = Clock::now();
  double accuracy = 0, last_loss = 0;
  int64_t global_step = start_epoch * steps_per_epoch;
  if (!o.json)
    std::cerr << "training " << o.model << " (" << model->num_parameters() << " parameters) on Fashion-MNIST, "
              << o.memory_format << ", " << o.dtype << ", " << omp_get_max_threads() << " threads, "
              << o.epochs << " epochs of " << steps_per_epoch << " steps\n";
  for (int64_t epoch = start_epoch; epoch < o.epochs; ++epoch) {
    train.start_epoch(epoch);
    const auto te = Clock::now();
    double loss_sum = 0;
    int64_t step = 0, images = 0;
    while (auto b = train.next()) {
      if (step >= steps_per_epoch) break;
      Tensor loss;
      {
        std::optional<nn::CastParameters> cast;
        if (dtype == kBFloat16) cast.emplace(*model, kBFloat16);
        Tensor logits = (*model)(b->input);
        loss = F::cross_entropy(logits.to(kFloat), b->target, F::Reduction::Mean, o.label_smoothing);
        opt->zero_grad();
        loss.backward();
      }
      opt->step();
      sched.step();
      last_loss = loss.item<double>();
      STRIDER_CHECK(std::isfinite(last_loss), "train", "the loss became ", last_loss, " at epoch ", epoch + 1,
                    " step ", step + 1, "; lower the learning rate (--lr)");
      loss_sum += last_loss;
      images += b->target.numel();
      ++step;
      ++global_step;
      loss_curve.points.emplace_back(static_cast<double>(global_step), last_loss);
      const double el = seconds_since(te);
      const bool report = tty ? (step % 5 == 0 || step == steps_per_epoch) : (step % std::max<int64_t>(1, steps_per_epoch / 4) == 0);
      if (o.progress && !o.json && report) {
        const double img_s = images / std::max(el, 1e-9);
        const double eta = (total_steps - global_step) * (el / step);
        print_progress(epoch + 1, o.epochs, step, steps_per_epoch, loss_sum / step, img_s, eta, tty);
      }
    }
    if (tty && !o.json) std::fputc('\n', stderr);
    const double epoch_s = seconds_since(te);
    accuracy = evaluate(*model, test, dtype);
    acc_curve.points.emplace_back(static_cast<double>(epoch + 1), accuracy);
    nlohmann::json rec = {{"epoch", epoch + 1}, {"train_loss", loss_sum / std::max<int64_t>(step, 1)},
                          {"test_accuracy", accuracy}, {"epoch_seconds", epoch_s},
                          {"images_per_s", images / std::max(epoch_s, 1e-9)}, {"lr", opt->lr()}};
    metrics << rec.dump() << "\n" << std::flush;
    if (!o.json)
      std::cerr << "epoch " << epoch + 1 << ": train loss " << loss_sum / std::max<int64_t>(step, 1) << ", test accuracy "
                << 100 * accuracy << "%, " << epoch_s << " s\n";
    save_checkpoint(o.out_dir + "/checkpoint.safetensors", *model, *opt, o, epoch + 1);
  }
  const double total_s = seconds_since(t0);
  write_svg_plot(o.out_dir + "/curves.svg", {loss_curve, acc_curve});
  nlohmann::json summary = {{"model", o.model}, {"memory_format", o.memory_format}, {"dtype", o.dtype},
                            {"epochs", o.epochs}, {"test_accuracy", accuracy}, {"final_loss", last_loss},
                            {"seconds", total_s}, {"out_dir", o.out_dir}};
  if (o.json) {
    std::cout << summary.dump() << "\n";
  } else {
    std::cout << "done: " << o.epochs << " epochs in " << total_s << " s, test accuracy " << 100 * accuracy
              << "%\n  metrics " << o.out_dir << "/metrics.jsonl, plot " << o.out_dir << "/curves.svg, checkpoint "
              << o.out_dir << "/checkpoint.safetensors\n";
  }
  return 0;
}

}  // namespace strider::tools
