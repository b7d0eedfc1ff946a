#!/usr/bin/env bash
# Runs a command with its --out directory emptied first, so that a test reruns in the same build
# tree: the trainer refuses a fresh run beside another run's checkpoints, and a resumed one beside
# checkpoints past the step it resumes.
# Usage: fresh_out.sh DIR COMMAND...
set -euo pipefail
rm -rf "${1:?usage: fresh_out.sh DIR COMMAND...}"
shift
exec "$@"
