"""Edits a strider checkpoint's manifest.json and re-seals it (recomputes its CRC-32C), so the
crafted-input tests reach the checks behind the manifest's checksum: a manifest whose checksum
is valid but whose content does not describe the files. Prints what it changed.
Usage: reseal_manifest.py CHECKPOINT_DIR EDIT
  empty-files  the files list emptied (tensors still point into it)
  point        the first tensor with a same-size neighbour in its file sent to that neighbour's bytes
  strategy     the recorded strategy changed to one strider does not write ('bogus')
  swap-rows    the first tensor with two equal halves in two files: each half sent to the other file,
               at the offset of that file's half (names, dtypes, shapes and offsets still agree)
  optimizer-steps  the optimizer's step count set to 10^15 (its per-parameter counts left alone)
  scheduler-step   the learning-rate schedule's step set to 2^62
  more-ranks   a rank added to world_size and the files list, its file never written
  strategy-local   the strategy (and every unit's) set to 'local', whatever the world size
  dup-key      the top-level "step" field written twice (the second one 10^9), re-sealed
  old-run-record   the user strings cut to the model's signature, as a trainer before the run record
                   (--seed, the data) saved them"""
import json
import sys


def crc32c(data):
    crc = 0xFFFFFFFF
    for byte in data:
        crc ^= byte
        for _ in range(8):
            crc = (crc >> 1) ^ 0x82F63B78 if crc & 1 else crc >> 1
    return crc ^ 0xFFFFFFFF


def seal(manifest):
    manifest.pop("~checksum", None)
    manifest["~checksum"] = "00000000"  # the last field; the checksum covers the text with these digits
    text = json.dumps(manifest, indent=1, ensure_ascii=False)
    digits = "%08x" % crc32c(text.encode("utf-8"))
    return text[: text.rfind("00000000")] + digits + text[text.rfind("00000000") + 8:] + "\n"


def shard_bytes(tensor):
    n = {"float32": 4, "float64": 8, "bfloat16": 2, "float16": 2, "int64": 8, "int32": 4, "uint8": 1, "bool": 1}
    size = n.get(tensor["dtype"], 0)
    for d in tensor["shape"][1:]:
        size *= d
    return [(s["rows"][1] - s["rows"][0]) * size for s in tensor["shards"]]


def main():
    path, edit = sys.argv[1] + "/manifest.json", sys.argv[2]
    with open(path, encoding="utf-8") as f:
        manifest = json.load(f)
    tensors = manifest["tensors"]
    if edit == "empty-files":
        manifest["files"] = []
        print("files: []")
    elif edit == "point":
        keys = sorted(k for k, t in tensors.items() if len(t["shards"]) == 1)
        pair = next((a, b) for a in keys for b in keys
                    if a != b and tensors[a]["dtype"] == tensors[b]["dtype"] and shard_bytes(tensors[a]) == shard_bytes(tensors[b])
                    and tensors[a]["shards"][0]["file"] == tensors[b]["shards"][0]["file"])
        a, b = pair
        tensors[a]["shards"][0]["offset"] = tensors[b]["shards"][0]["offset"]
        print(a, b)
    elif edit == "strategy":
        manifest["strategy"] = "bogus"
        print("strategy: bogus")
    elif edit == "swap-rows":
        key = next(k for k, t in sorted(tensors.items()) if len(t["shards"]) == 2
                   and len(set(shard_bytes(t))) == 1 and t["shards"][0]["file"] != t["shards"][1]["file"])
        s0, s1 = tensors[key]["shards"]
        s0["file"], s1["file"] = s1["file"], s0["file"]
        s0["offset"], s1["offset"] = s1["offset"], s0["offset"]
        print(key)
    elif edit == "optimizer-steps":
        manifest["optimizer"]["steps"] = 10 ** 15
        print("optimizer.steps: 10^15")
    elif edit == "scheduler-step":
        manifest["scheduler"]["step"] = 2 ** 62
        print("scheduler.step: 2^62")
    elif edit == "more-ranks":
        extra = dict(manifest["files"][-1])
        manifest["world_size"] += 1
        extra["name"] = "rank-%05d-of-%05d.safetensors" % (manifest["world_size"] - 1, manifest["world_size"])
        manifest["files"].append(extra)
        if manifest["rng"]:
            manifest["rng"].append(manifest["rng"][-1])
        print(extra["name"])
    elif edit == "strategy-local":
        manifest["strategy"] = "local"
        for unit in manifest["units"]:
            unit["strategy"] = "local"
        print("strategy: local")
    elif edit == "dup-key":
        text = seal(manifest)
        at = text.index('\n "step": ')
        text = text[:at] + '\n "step": 1000000000,' + text[at:]
        manifest.pop("~checksum", None)
        zeroed = text[: text.rfind('"~checksum": "')] + '"~checksum": "00000000"\n}'
        digits = "%08x" % crc32c(zeroed.encode("utf-8"))
        with open(path, "w", encoding="utf-8") as f:
            f.write(zeroed[: zeroed.rfind("00000000")] + digits + '"\n}\n')
        print("step twice")
        return
    elif edit == "old-run-record":
        manifest["user"] = {"model": manifest["user"]["model"]}
        print("user: model only")
    else:
        sys.exit("unknown edit " + edit)
    with open(path, "w", encoding="utf-8") as f:
        f.write(seal(manifest))


main()
