#pragma once
// Whether ops record the graph. Thread-local, switched by RAII guards (as torch.no_grad()).

namespace strider::autograd {

class GradMode {
 public:
  static bool is_enabled();
  static void set_enabled(bool enabled);
};

// Disables recording in its scope: optimizer steps, evaluation, weight initialization.
class NoGradGuard {
 public:
  NoGradGuard() : saved_(GradMode::is_enabled()) { GradMode::set_enabled(false); }
  ~NoGradGuard() { GradMode::set_enabled(saved_); }
  NoGradGuard(const NoGradGuard&) = delete;
  NoGradGuard& operator=(const NoGradGuard&) = delete;

 private:
  bool saved_;
};

class EnableGradGuard {
 public:
  EnableGradGuard() : saved_(GradMode::is_enabled()) { GradMode::set_enabled(true); }
  ~EnableGradGuard() { GradMode::set_enabled(saved_); }
  EnableGradGuard(const EnableGradGuard&) = delete;
  EnableGradGuard& operator=(const EnableGradGuard&) = delete;

 private:
  bool saved_;
};

}  // namespace strider::autograd

namespace strider {
using autograd::NoGradGuard;
}
