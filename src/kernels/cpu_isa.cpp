#include "kernels/cpu_isa.h"

#include <cpuid.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdlib>
#include <string>

#include "strider/core/error.h"

namespace strider::kernels {
namespace {

constexpr Isa kLevels[] = {Isa::baseline, Isa::avx2, Isa::avx512, Isa::avx512_bf16, Isa::amx_bf16};

// What -march=x86-64-v3 assumes beyond AVX2 and FMA (F16C, MOVBE, LZCNT, BMI1, BMI2), and -v4
// beyond AVX-512 F/BW/VL/DQ (AVX512CD), read from CPUID: clang 14's __builtin_cpu_supports
// names neither these nor the levels themselves.
bool has_v3_extras() {
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d)) return false;
  const bool f16c = c & (1u << 29), movbe = c & (1u << 22);
  if (!__get_cpuid(0x80000001u, &a, &b, &c, &d)) return false;
  const bool lzcnt = c & (1u << 5);
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool bmi1 = b & (1u << 3), bmi2 = b & (1u << 8);
  return f16c && movbe && lzcnt && bmi1 && bmi2;
}

bool has_v4_extras() {
  unsigned a, b, c, d;
  return __get_cpuid_count(7, 0, &a, &b, &c, &d) && (b & (1u << 28));  // AVX512CD
}

bool cpuid_reports_amx_bf16() {
  unsigned a, b, c, d;
  if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return false;
  const bool amx_bf16 = d & (1u << 22), amx_tile = d & (1u << 24);
  return amx_bf16 && amx_tile;
}

// AMX-TILE and AMX-BF16 in CPUID, the tile state enabled in XCR0, and Linux's leave to use it
// (arch_prctl(ARCH_REQ_XCOMP_PERM): the tile data is not in a process's state until it asks, the
// request oneDNN makes itself before its AMX kernels).
bool has_amx_bf16() {
  if (!cpuid_reports_amx_bf16()) return false;
  unsigned a, b, c, d;
  if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & (1u << 27))) return false;  // OSXSAVE: xgetbv may run
  unsigned lo, hi;
  __asm__ volatile("xgetbv" : "=a"(lo), "=d"(hi) : "c"(0));
  constexpr unsigned kTileCfg = 1u << 17, kTileData = 1u << 18;
  if ((lo & (kTileCfg | kTileData)) != (kTileCfg | kTileData)) return false;
  constexpr long kArchReqXcompPerm = 0x1023, kXfeatureXtileData = 18;
  return syscall(SYS_arch_prctl, kArchReqXcompPerm, kXfeatureXtileData) == 0;
}

// __builtin_cpu_supports also checks that the OS saves the wide registers (XCR0).
Isa detect() {
  __builtin_cpu_init();
  // The per-level kernels are compiled -march=x86-64-v3 / -v4 (cmake/isa_kernels.cmake), which
  // also assume F16C, BMI1/2, LZCNT, MOVBE and AVX512CD: each level asks for its whole set.
  if (!__builtin_cpu_supports("avx2") || !__builtin_cpu_supports("fma") || !has_v3_extras()) return Isa::baseline;
  if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
      !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("avx512dq") || !has_v4_extras())
    return Isa::avx2;
  if (!__builtin_cpu_supports("avx512bf16")) return Isa::avx512;
  if (!has_amx_bf16()) return Isa::avx512_bf16;
  return Isa::amx_bf16;
}

}  // namespace

Isa capped_isa(const char* v, Isa detected) {
  if (!v || !*v) return detected;
  for (Isa level : kLevels)
    if (std::string(v) == isa_name(level)) return level < detected ? level : detected;
  STRIDER_CHECK(false, "STRIDER_MAX_CPU_ISA", "unknown instruction set '", v,
                "'; use one of baseline, avx2, avx512, avx512_bf16, amx_bf16 (or unset it for the widest this CPU has)");
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

bool cpu_reports_amx() {
  static const bool reported =
      cpuid_reports_amx_bf16() && capped_isa(std::getenv("STRIDER_MAX_CPU_ISA"), Isa::amx_bf16) == Isa::amx_bf16;
  return reported;
}

const char* isa_name(Isa isa) {
  switch (isa) {
    case Isa::baseline: return "baseline";
    case Isa::avx2: return "avx2";
    case Isa::avx512: return "avx512";
    case Isa::avx512_bf16: return "avx512_bf16";
    case Isa::amx_bf16: return "amx_bf16";
  }
  return "unknown";
}

}  // namespace strider::kernels
