#pragma once
// Which process this is, as the launcher (OpenMPI's mpirun, MPICH's hydra, srun) tells it
// through the environment before MPI starts. A process started by hand is rank 0 of 1.
#include <cstdint>

namespace strider::tools {

struct LauncherProcess {
  int64_t rank = 0;
  int64_t world = 1;
};

// Unset or unreadable variables count as rank 0 of 1.
LauncherProcess launcher_process();

}  // namespace strider::tools
