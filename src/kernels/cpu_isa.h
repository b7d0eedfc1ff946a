#pragma once
// The instruction set our own kernels run with: the widest this CPU (and its OS) supports,
// capped by STRIDER_MAX_CPU_ISA=baseline|avx2|avx512|avx512_bf16|amx_bf16. The same cap goes to oneDNN
// (dnnl_ops::engine() applies it before the first primitive), so one machine can run and test
// every path a smaller CPU would take. Kernels compiled for several levels pick theirs here at
// run time, as oneDNN and PyTorch do, so one binary runs on every x86-64 CPU.
namespace strider::kernels {

// Ordered: each level includes the ones before it.
enum class Isa {
  baseline,     // x86-64 (SSE2)
  avx2,         // AVX2 + FMA
  avx512,       // AVX-512 F/BW/VL/DQ (oneDNN's avx512_core)
  avx512_bf16,  // plus AVX512_BF16 (vdpbf16ps)
  amx_bf16,     // plus AMX tiles with bfloat16 products (tdpbf16ps), granted by the OS: oneDNN
                // and attention's bfloat16 products use them; the cap below it keeps both off
};

// Detected once per process, after the cap; a bad STRIDER_MAX_CPU_ISA is a strider::Error.
Isa cpu_isa();
// The widest level the CPU has, ignoring the cap.
Isa detected_cpu_isa();
// "avx2", "avx512", ... (the spelling STRIDER_MAX_CPU_ISA takes).
const char* isa_name(Isa isa);
inline bool cpu_has(Isa level) { return cpu_isa() >= level; }
// Whether CPUID reports AMX-BF16, granted by the OS or not: Intel's cores from Sapphire Rapids,
// which run vdpbf16ps at half the FMA's rate. A cap below amx_bf16 says no, so that one machine
// can run the paths of CPUs without AMX.
bool cpu_reports_amx();
// The level a STRIDER_MAX_CPU_ISA value (null or empty: no cap) leaves of `detected`.
Isa capped_isa(const char* requested, Isa detected);

}  // namespace strider::kernels
