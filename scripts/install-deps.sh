#!/usr/bin/env bash
# Installs the Debian 12 packages strider builds and tests with, when any is missing.
# --no-install-recommends keeps the set exact, so everything needed is named here:
# ocl-icd-opencl-dev because Debian's oneDNN CMake package looks for OpenCL; clang with its
# runtime libraries (sanitizers, libFuzzer) and OpenMP for the sanitizer and fuzzing build;
# iproute2 for the emulated hosts (scripts/emulated-hosts.sh); libpng and libjpeg-turbo for the
# image readers. With --slurm also slurm-wlm and munge, for the Slurm test
# (scripts/slurm-cluster.sh; skipped, saying so, without them). Not by default: they install
# daemons a user may not want (CI's run of scripts/run-tests.sh asks for them).
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config
          libgtest-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
          libdnnl-dev ocl-icd-opencl-dev dataset-fashion-mnist
          libopenmpi-dev openmpi-bin iproute2
          libpng-dev libjpeg62-turbo-dev
          clang libclang-rt-14-dev libomp-14-dev)
optional=()
if [ "${1:-}" = "--slurm" ]; then optional=(slurm-wlm munge); fi
missing_of() {
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || echo "$p"
  done
}
mapfile -t missing < <(missing_of "${packages[@]}")
missing_optional=()
[ ${#optional[@]} -eq 0 ] || mapfile -t missing_optional < <(missing_of "${optional[@]}")
if [ ${#missing[@]} -eq 0 ] && [ ${#missing_optional[@]} -eq 0 ]; then
  exit 0
fi
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
if [ ${#missing[@]} -gt 0 ]; then
  echo "installing: ${missing[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
if [ ${#missing_optional[@]} -gt 0 ]; then
  echo "installing (optional): ${missing_optional[*]}"
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing_optional[@]}" ||
    echo "could not install ${missing_optional[*]}: the Slurm test will be skipped"
fi
