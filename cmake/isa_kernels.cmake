# strider_add_isa_kernels(<target> SOURCES ...): compiles the sources once per instruction-set
# level, as PyTorch's ATen does with CPU_CAPABILITY, and adds the objects to <target>. Each level
# is an object library with its own -march and STRIDER_ISA_NAMESPACE=isa_<level>, the namespace
# every function and template of those sources and their kernel headers lives in
# (src/kernels/isa_namespace.h). src/kernels/cpu/isa_dispatch.cpp chooses a level at run time.
# With STRIDER_NATIVE the sources are compiled once, for the build machine (isa_native); so they
# are with compilers other than GCC, which lack -fno-weak (below): without it the levels' copies of
# header inline functions would be weak symbols the linker merges across levels, so those builds
# (clang's sanitizer build among them) compile the kernels once, with the build's own flags.
if(NOT STRIDER_NATIVE AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  set(STRIDER_PER_ISA_KERNELS ON)
else()
  set(STRIDER_PER_ISA_KERNELS OFF)
endif()
set(STRIDER_ISA_FLAGS_baseline -march=x86-64 -mtune=generic)
set(STRIDER_ISA_FLAGS_avx2 -march=x86-64-v3 -mtune=generic)     # AVX2, FMA, F16C, BMI2
set(STRIDER_ISA_FLAGS_avx512 -march=x86-64-v4 -mtune=generic)   # AVX-512 F/BW/DQ/VL

function(strider_add_isa_kernels target)
  cmake_parse_arguments(K "" "" "SOURCES" ${ARGN})
  if(NOT STRIDER_PER_ISA_KERNELS)
    set(levels native)
    target_compile_definitions(${target} PRIVATE STRIDER_NATIVE_KERNELS=1)
  else()
    set(levels baseline avx2 avx512)
  endif()
  foreach(level IN LISTS levels)
    set(obj ${target}_isa_${level})
    add_library(${obj} OBJECT ${K_SOURCES})
    # -fno-weak: inline functions and templates of headers outside the ISA namespace (core's
    # Half conversions, error-message builders, std::) become private copies of this object
    # instead of weak symbols the linker would merge across levels
    # (scripts/check-isa-objects.sh checks both).
    if(STRIDER_PER_ISA_KERNELS)
      target_compile_options(${obj} PRIVATE ${STRIDER_ISA_FLAGS_${level}} -fno-weak)
    endif()
    target_compile_definitions(${obj} PRIVATE STRIDER_ISA_NAMESPACE=isa_${level})
    # -fno-trapping-math: else GCC leaves loops over selects with float compares in an arm (vmath)
    # scalar below AVX-512 (docs/design.md; scripts/check-vmath-vectorized.sh checks it).
    target_compile_options(${obj} PRIVATE -fno-trapping-math)
    # The same include paths, features and OpenMP flags as the target itself. The public headers
    # count as system headers here: under -fno-weak each of their constexpr inline variables
    # draws a "multiple copies" warning, harmless for constants.
    target_include_directories(${obj} SYSTEM PRIVATE ${PROJECT_SOURCE_DIR}/include)
    target_include_directories(${obj} PRIVATE $<TARGET_PROPERTY:${target},INCLUDE_DIRECTORIES>)
    target_link_libraries(${obj} PRIVATE $<TARGET_PROPERTY:${target},LINK_LIBRARIES>)
    target_compile_features(${obj} PRIVATE cxx_std_20)
    target_sources(${target} PRIVATE $<TARGET_OBJECTS:${obj}>)
  endforeach()
endfunction()
