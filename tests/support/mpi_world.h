#pragma once
// The world for distributed tests; mpi_gtest_main.cpp initialises it before any test runs (an
// MPI world under mpirun, or world size 1 in a build without MPI).
#include <strider/dist/process_group.h>

#include <memory>

namespace strider::testing {

inline std::shared_ptr<dist::ProcessGroup>& world() {
  static std::shared_ptr<dist::ProcessGroup> pg;
  return pg;
}

}  // namespace strider::testing
