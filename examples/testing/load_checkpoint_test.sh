#!/usr/bin/env bash
# Runs load_pytorch_checkpoint on a ResNet-50 file strider writes and, when /usr/bin/python3 has
# torchvision, on one PyTorch writes; each must reproduce its reference logits in channels-last.
set -euo pipefail
example=$1 writer=$2 work=$3
mkdir -p "$work"
"$writer" "$work/strider_resnet50.safetensors" "$work/strider_reference.safetensors"
"$example" "$work/strider_resnet50.safetensors" "$work/strider_reference.safetensors"
echo "strider-written checkpoint: ok"
if /usr/bin/python3 -c "import torchvision" 2>/dev/null; then
  /usr/bin/python3 "$(dirname "$0")/write_torchvision_resnet50.py" "$work/torchvision_resnet50.safetensors" \
    "$work/torchvision_reference.safetensors"
  "$example" "$work/torchvision_resnet50.safetensors" "$work/torchvision_reference.safetensors"
  echo "PyTorch-written checkpoint: ok"
else
  echo "PyTorch-written checkpoint: skipped (/usr/bin/python3 has no torchvision)"
fi
