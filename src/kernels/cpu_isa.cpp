#include "kernels/cpu_isa.h"

#include <cstdlib>
#include <string>

#include "strider/core/error.h"

namespace strider::kernels {
namespace {

constexpr Isa kLevels[] = {Isa::baseline, Isa::avx2, Isa::avx512, Isa::avx512_bf16};

// __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
Isa detect() {
  __builtin_cpu_init();
  // The per-level kernels are compiled -march=x86-64-v3 / -v4 (cmake/isa_kernels.cmake), which
  // also assume F16C, BMI1/2, LZCNT, MOVBE and AVX512CD: each level asks for its whole set.
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") ||
      !__builtin_cpu_supports("x86-64-v3"))
    return Isa::baseline;
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq") ||
      !__builtin_cpu_supports("x86-64-v4"))
    return Isa::avx2;
  if (!__builtin_cpu_supports("avx512bf16")) return Isa::avx512;
  return Isa::avx512_bf16;
}

}  // namespace

Isa capped_isa(const char* v, Isa detected) {
  if (!v || !*v) return detected;
  for (Isa level : kLevels)
    if (std::string(v) == isa_name(level)) return level < detected ? level : detected;
  STRIDER_CHECK(false, "STRIDER_MAX_CPU_ISA", "unknown instruction set '", v,
                "'; use one of baseline, avx2, avx512, avx512_bf16 (or unset it for the widest this CPU has)");
  return detected;
}

Isa detected_cpu_isa() {
  static const Isa detected = detect();
  return detected;
}

Isa cpu_isa() {
  static const Isa capped = capped_isa(std::getenv("STRIDER_MAX_CPU_ISA"), detected_cpu_isa());
  return capped;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::baseline: return "baseline";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512_bf16: return "avx512_bf16";
  }
  return "unknown";
}

}  // namespace strider::kernels
