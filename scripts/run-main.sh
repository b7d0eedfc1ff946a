#!/usr/bin/env bash
# The main job: build strider (Release) and run `strider` on its default task.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/install-deps.sh
cmake -S . -B build -G Ninja -DCMAKE_BUILD_TYPE=Release > /dev/null
cmake --build build -j2 --target strider-cli
exec build/tools/strider "$@"
