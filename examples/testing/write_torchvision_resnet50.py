"""Test helper for load_pytorch_checkpoint: torchvision's ResNet-50 (random weights, no
download) saved as safetensors with its state dict's names, and a reference input with the
logits PyTorch computes for it. Run with Debian's /usr/bin/python3 (python3-torchvision)."""
import json
import struct
import sys

import torch
import torchvision


def save(path, tensors):
    dtypes = {torch.float32: "F32", torch.int64: "I64"}
    header, blobs, offset = {}, [], 0
    for key, t in tensors.items():
        data = t.detach().contiguous().numpy().tobytes()
        header[key] = {"dtype": dtypes[t.dtype], "shape": list(t.shape), "data_offsets": [offset, offset + len(data)]}
        blobs.append(data)
        offset += len(data)
    h = json.dumps(header).encode()
    h += b" " * (-len(h) % 8)
    with open(path, "wb") as f:
        f.write(struct.pack("<Q", len(h)) + h + b"".join(blobs))


torch.manual_seed(50)
model = torchvision.models.resnet50()
with torch.no_grad():
    for name, b in model.named_buffers():
        if name.endswith("running_mean"):
            b.copy_(torch.randn_like(b) * 0.1)
        elif name.endswith("running_var"):
            b.copy_(torch.rand_like(b) + 0.5)
model.eval()
save(sys.argv[1], model.state_dict())
x = torch.randn(2, 3, 224, 224)
with torch.no_grad():
    save(sys.argv[2], {"input": x, "logits": model(x)})
