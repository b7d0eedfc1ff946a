"""Writes what llm.c's CPU trainer (train_gpt2.c) reads, for a GPT of strider's benchmark shape:
gpt2_124M.bin (its checkpoint format, version 3: a 256-int header, then every parameter as
float32 in its order) with random weights (N(0, 0.02) matrices, zero biases, unit LayerNorm
gains), and train/val token files (header 20240520, version 1, count; uint16 tokens) of random
bytes. The vocabulary is 256 (bytes), as in strider_bench_fsdp, so both train the same model.

    /usr/bin/python3 bench/write_llmc_inputs.py DIR [--n-layer 12 --n-embd 768 --seq 256]
"""
import argparse
import os

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("dir")
    ap.add_argument("--n-layer", type=int, default=12)
    ap.add_argument("--n-embd", type=int, default=768)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--tokens", type=int, default=1 << 18)
    a = ap.parse_args()
    L, C, T, V = a.n_layer, a.n_embd, a.seq, 256
    rng = np.random.default_rng(1)
    header = np.zeros(256, dtype=np.int32)
    header[:8] = [20240326, 3, T, V, L, C // 64, C, V]
    normal = lambda n: rng.normal(0.0, 0.02, n).astype(np.float32)
    zeros = lambda n: np.zeros(n, dtype=np.float32)
    ones = lambda n: np.ones(n, dtype=np.float32)
    # The order of fill_in_parameter_sizes in train_gpt2.c.
    tensors = [normal(V * C), normal(T * C), ones(L * C), zeros(L * C), normal(L * 3 * C * C), zeros(L * 3 * C),
               normal(L * C * C), zeros(L * C), ones(L * C), zeros(L * C), normal(L * 4 * C * C), zeros(L * 4 * C),
               normal(L * 4 * C * C), zeros(L * C), ones(C), zeros(C)]
    with open(os.path.join(a.dir, "gpt2_124M.bin"), "wb") as f:
        f.write(header.tobytes())
        for t in tensors:
            f.write(t.tobytes())
    data = os.path.join(a.dir, "dev", "data", "tinyshakespeare")
    os.makedirs(data, exist_ok=True)
    for name in ("tiny_shakespeare_train.bin", "tiny_shakespeare_val.bin"):
        h = np.zeros(256, dtype=np.int32)
        h[:3] = [20240520, 1, a.tokens]
        with open(os.path.join(data, name), "wb") as f:
            f.write(h.tobytes())
            f.write(rng.integers(0, V, a.tokens, dtype=np.uint16).tobytes())


if __name__ == "__main__":
    main()
