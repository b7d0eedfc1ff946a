#!/usr/bin/env bash
# Installs the Debian 12 packages strider builds with, when any is missing.
set -euo pipefail
packages=(build-essential cmake ninja-build pkg-config
          libgtest-dev libbenchmark-dev nlohmann-json3-dev libcli11-dev zlib1g-dev libdnnl-dev dataset-fashion-mnist
          libopenmpi-dev openmpi-bin)
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
