#!/usr/bin/env bash
# Builds strider against Debian's MPICH instead of OpenMPI (in build-mpich/) and runs the
# distributed tests there: every collective, FSDP, checkpoint and fault test, under MPICH's
# launcher (hydra). The tests that drive OpenMPI's mpirun from scripts run with OpenMPI only.
# Not part of scripts/run-tests.sh: a second build of the library doubles the CI time.
# Usage: scripts/test-mpich.sh [ctest arguments]
set -euo pipefail
cd "$(dirname "$0")/.."
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
if ! dpkg-query -W -f='${Status}' libmpich-dev 2>/dev/null | grep -q "install ok installed"; then
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends libmpich-dev mpich
fi
scripts/install-deps.sh
launcher=()
command -v ccache > /dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache)
cmake -S . -B build-mpich -G Ninja -DCMAKE_BUILD_TYPE=Release "${launcher[@]}" \
  -DMPI_CXX_COMPILER=/usr/bin/mpicxx.mpich -DMPI_C_COMPILER=/usr/bin/mpicc.mpich \
  -DMPIEXEC_EXECUTABLE=/usr/bin/mpiexec.mpich
cmake --build build-mpich -j "$(nproc)"
cd build-mpich
ctest -L distributed --output-on-failure "$@"
