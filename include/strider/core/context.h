#pragma once
// The process's state, in one place. Everything strider keeps beyond the objects a user holds
// is reachable from Context::process(), in one of two kinds:
//
//   Process-wide: one instance, shared by every thread and safe to use from any of them: the
//   compute allocator and its counters (memory_stats()), the default generator (manual_seed();
//   draw from it on one thread at a time, or give each thread its own Generator), the
//   memory-format check, verbose and autotune flags, and the layers' slots: oneDNN's engine, primitive
//   caches and reordered weights (kernels), FSDP's gradient scratch and offload tiers (fsdp), the
//   deferred-initialization registry of stand-ins and their recipes (nn). Two process-wide
//   things live with their code instead: MPI's world group and its heartbeat
//   (MpiProcessGroup::init), because MPI initializes once per process and its destructor must
//   run at exit to finalize MPI; and whether this process is ending a failed job
//   (src/dist/end_job.h), an atomic flag that aborts set from any thread.
//   Upper layers keep such state in a typed slot (slot<T>()), created on first use; a slot with
//   a release() method gives its memory back in release_caches() (empty_cache()).
//
//   Per thread: this_thread() — the kernel preference (KernelPreferenceGuard) and the gradient
//   mode (NoGradGuard). A new thread starts with the defaults; guards restore on scope exit.
//   Three more live with their code because they only exist while a call runs or belong to one
//   object: oneDNN's stream (one per thread, oneDNN streams are not thread-safe), the small-block
//   free lists of the allocator, and call-scoped stacks and modes (autograd's queued callbacks,
//   auto-wrap scopes, collective labels, the deferred-init scope's seed, activation
//   checkpointing's forward and recomputation depths, oneDNN's last scratchpad size). Counters
//   that only hand out unique numbers are atomics beside their code (storage generations, node
//   sequence numbers, hook handles).
//
// The context is never destroyed: tensors in static objects may outlive static destruction.
#include <atomic>
#include <functional>
#include <memory>
#include <mutex>
#include <unordered_map>
#include <vector>

#include "strider/core/allocator.h"
#include "strider/core/generator.h"

namespace strider {

enum class KernelPreference { Fastest, Reference };

class Context {
 public:
  static Context& process();

  // ---- process-wide ---------------------------------------------------------------------
  Allocator& allocator();
  MemoryStats memory_stats() const;
  void reset_peak_memory();
  Generator& default_generator() { return generator_; }
  std::atomic<bool> memory_format_check{false};
  std::atomic<bool> kernel_verbose{false};
  std::atomic<bool> kernel_autotune{false};

  // The process's one T (default-constructed on first use, by whichever thread comes first).
  // Slots are keyed by the address of a per-type tag, not by typeid: clang's type_info treats
  // same-named types in different files' anonymous namespaces as equal, and two caches would
  // share one slot.
  template <class T>
  T& slot() {
    static T* const cached = static_cast<T*>(find_or_add(&SlotTag<T>::tag, [] {
      auto object = std::make_shared<T>();
      std::function<void()> release;
      if constexpr (requires(T& t) { t.release(); }) release = [raw = object.get()] { raw->release(); };
      return Slot{std::move(object), std::move(release)};
    }));
    return *cached;
  }

  // Gives back what caches hold: every slot's release(), then the allocator's free blocks.
  void release_caches();

  // ---- per thread -----------------------------------------------------------------------
  struct ThreadState {
    KernelPreference kernel_preference = KernelPreference::Fastest;
    bool grad_enabled = true;
  };
  static ThreadState& this_thread();

 private:
  Context();
  struct Slot {
    std::shared_ptr<void> object;
    std::function<void()> release;
  };
  template <class T>
  struct SlotTag {
    static constexpr char tag = 0;
  };
  void* find_or_add(const void* key, const std::function<Slot()>& make);

  Allocator* allocator_;
  Generator generator_;
  std::mutex mu_;
  std::unordered_map<const void*, Slot> slots_;
  std::vector<const void*> order_;  // creation order, for release_caches
};

}  // namespace strider
