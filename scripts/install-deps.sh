#!/usr/bin/env bash
# Installs the Debian 12 packages strider builds and tests with, when any is missing.
# --no-install-recommends keeps the set exact, so everything needed is named here:
# ocl-icd-opencl-dev because Debian's oneDNN CMake package looks for OpenCL; clang with its
# runtime libraries (sanitizers, libFuzzer) and OpenMP for the sanitizer and fuzzing build;
# iproute2 for the emulated hosts (scripts/emulated-hosts.sh).
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config
          libgtest-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev zlib1g-dev libpng-dev libjpeg62-turbo-dev
          libdnnl-dev ocl-icd-opencl-dev dataset-fashion-mnist
          libopenmpi-dev openmpi-bin iproute2
          clang libclang-rt-14-dev libomp-14-dev)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -eq 0 ]; then
  exit 0
fi
echo "installing: ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then sudo="sudo"; fi
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
