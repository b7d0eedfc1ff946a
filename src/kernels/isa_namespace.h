#pragma once
// The namespace of code compiled once per instruction-set level. CMake's
// strider_add_isa_kernels (cmake/isa_kernels.cmake) compiles each kernel source once per level
// with that level's -march and STRIDER_ISA_NAMESPACE=isa_<level>; the kernel headers put every
// inline function and template in that namespace, so the AVX-512 copy of a helper can never
// replace the baseline one at link time (an ODR merge that would run AVX-512 code on an AVX2
// CPU). Sources compiled once, with the library's own flags, get isa_default.
#ifndef STRIDER_ISA_NAMESPACE
#define STRIDER_ISA_NAMESPACE isa_default
#endif
