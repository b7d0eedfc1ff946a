"""An independent reader of strider's files: checks that a consolidated safetensors file holds,
under the model's own names, exactly the rows a checkpoint's rank files hold (per its
manifest), and, when PyTorch is installed, that torch loads every tensor with the right dtype
and shape. Uses only the safetensors format itself (8-byte length, JSON header, raw bytes).
Usage: check_consolidated.py CONSOLIDATED.safetensors CHECKPOINT_DIR"""
import json
import os
import struct
import sys


def read_safetensors(path):
    with open(path, "rb") as f:
        (n,) = struct.unpack("<Q", f.read(8))
        header = json.loads(f.read(n))
        data = f.read()
    header.pop("__metadata__", None)
    return {k: (v["dtype"], v["shape"], data[v["data_offsets"][0]:v["data_offsets"][1]]) for k, v in header.items()}


def main():
    consolidated, ckpt = sys.argv[1], sys.argv[2]
    got = read_safetensors(consolidated)
    manifest = json.load(open(os.path.join(ckpt, "manifest.json")))
    files = [read_safetensors(os.path.join(ckpt, f["name"])) for f in manifest["files"]]
    model = {k[len("model/"):]: t for k, t in manifest["tensors"].items() if k.startswith("model/")}
    assert sorted(got) == sorted(model), f"names differ: {sorted(set(got) ^ set(model))}"
    for name, t in model.items():
        dtype, shape, data = got[name]
        names = {"float32": "F32", "bfloat16": "BF16", "float64": "F64", "float16": "F16", "int64": "I64",
                 "int32": "I32", "uint8": "U8", "bool": "BOOL"}
        assert dtype == names.get(t["dtype"]) and shape == t["shape"], f"{name}: {dtype} {shape} vs {t['dtype']} {t['shape']}"
        rows = b"".join(files[s["file"]]["model/" + name][2] for s in t["shards"])
        assert data == rows, f"{name}: bytes differ from the checkpoint's shards"
    try:
        import torch
    except ImportError:
        print(f"{len(got)} tensors match the checkpoint's shards (PyTorch not installed: not loaded into torch)")
        return
    dtypes = {"F32": torch.float32, "BF16": torch.bfloat16, "F64": torch.float64, "F16": torch.float16,
              "I64": torch.int64, "I32": torch.int32, "U8": torch.uint8, "BOOL": torch.bool}
    for name, (dtype, shape, data) in got.items():
        t = torch.frombuffer(bytearray(data), dtype=dtypes[dtype]).reshape(shape)
        assert list(t.shape) == shape and (t.numel() == 0 or bool(torch.isfinite(t.float()).all())), name
    print(f"{len(got)} tensors match the checkpoint's shards and load into torch {torch.__version__}")


if __name__ == "__main__":
    main()
