#pragma once
// The MPI world for distributed tests; mpi_gtest_main.cpp initialises it before any test runs.
#include <strider/dist/mpi_process_group.h>

#include <memory>

namespace strider::testing {

inline std::shared_ptr<dist::MpiProcessGroup>& world() {
  static std::shared_ptr<dist::MpiProcessGroup> pg;
  return pg;
}

}  // namespace strider::testing
