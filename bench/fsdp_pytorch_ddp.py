"""PyTorch 1.13 side of the FSDP benchmark: the same GPT (minGPT shape, byte vocabulary) trained
with AdamW locally or under DistributedDataParallel over gloo, one JSON line from rank 0 with
the fields strider_bench_fsdp prints (step seconds, tokens per second, peak resident memory).
--dtype bfloat16 runs forward and loss under CPU autocast (float32 parameters and AdamW).

    OMP_NUM_THREADS=1 mpirun -np 2 /usr/bin/python3 bench/fsdp_pytorch_ddp.py --strategy ddp \
        --n-layer 24 --n-embd 1024 --batch 2 --seq 64 --steps 3

PyTorch 1.13's FSDP is not measured: it requires CUDA, and the gloo backend lacks the
all-gather-base and reduce-scatter collectives it needs.
"""
import argparse
import json
import math
import os
import time

import torch
import torch.distributed as dist
import torch.nn as nn
import torch.nn.functional as F


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.n_head = n_head
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)

    def forward(self, x):
        B, T, C = x.shape
        q, k, v = self.c_attn(x).split(C, dim=2)
        q, k, v = (t.view(B, T, self.n_head, C // self.n_head).transpose(1, 2) for t in (q, k, v))
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        mask = torch.ones(T, T, dtype=torch.bool).triu(1)
        att = att.masked_fill(mask, float("-inf")).softmax(-1)
        return self.c_proj((att @ v).transpose(1, 2).reshape(B, T, C))


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.c_fc = nn.Linear(n_embd, 4 * n_embd)
        self.c_proj = nn.Linear(4 * n_embd, n_embd)

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.c_proj(F.gelu(self.c_fc(self.ln_2(x))))


class GPT(nn.Module):
    def __init__(self, n_layer, n_embd, seq, vocab=256):
        super().__init__()
        self.wte = nn.Embedding(vocab, n_embd)
        self.wpe = nn.Embedding(seq, n_embd)
        self.h = nn.ModuleList(Block(n_embd, n_embd // 64) for _ in range(n_layer))
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, vocab, bias=False)

    def forward(self, idx):
        x = self.wte(idx) + self.wpe(torch.arange(idx.size(1)))
        for b in self.h:
            x = b(x)
        return self.lm_head(self.ln_f(x))


def status_bytes(field):
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith(field + ":"):
                return float(line.split()[1]) * 1024
    return 0.0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--strategy", default="ddp", choices=["local", "ddp"])
    ap.add_argument("--n-layer", type=int, default=12)
    ap.add_argument("--n-embd", type=int, default=768)
    ap.add_argument("--batch", type=int, default=2)  # per rank
    ap.add_argument("--seq", type=int, default=64)
    ap.add_argument("--steps", type=int, default=3)
    ap.add_argument("--dtype", default="float32", choices=["float32", "bfloat16"])  # bfloat16: CPU autocast
    a = ap.parse_args()
    torch.set_num_threads(int(os.environ.get("OMP_NUM_THREADS", "1")))
    rank = int(os.environ.get("OMPI_COMM_WORLD_RANK", "0"))
    world = int(os.environ.get("OMPI_COMM_WORLD_SIZE", "1"))
    if a.strategy == "ddp":
        os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
        os.environ.setdefault("MASTER_PORT", "29517")
        dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(1)
    model = GPT(a.n_layer, a.n_embd, a.seq)
    params = sum(p.numel() for p in model.parameters())
    if a.strategy == "ddp":
        model = nn.parallel.DistributedDataParallel(model)
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    g = torch.Generator().manual_seed(7 + rank)
    tokens = torch.randint(0, 256, (a.batch, a.seq + 1), generator=g)
    x, y = tokens[:, :-1].contiguous(), tokens[:, 1:].contiguous()
    times = []
    anon = 0.0
    for s in range(a.steps + 1):
        if s == 1:
            with open("/proc/self/clear_refs", "w") as f:
                f.write("5")
        if world > 1 and a.strategy == "ddp":
            dist.barrier()
        t0 = time.perf_counter()
        with torch.autocast("cpu", dtype=torch.bfloat16, enabled=a.dtype == "bfloat16"):
            loss = F.cross_entropy(model(x).reshape(-1, 256).float(), y.reshape(-1))
        anon = max(anon, status_bytes("RssAnon")) if s > 0 else anon
        opt.zero_grad(set_to_none=True)
        loss.backward()
        anon = max(anon, status_bytes("RssAnon")) if s > 0 else anon
        opt.step()
        anon = max(anon, status_bytes("RssAnon")) if s > 0 else anon
        if world > 1 and a.strategy == "ddp":
            dist.barrier()
        if s > 0:
            times.append(time.perf_counter() - t0)
    rss = torch.tensor([status_bytes("VmHWM"), anon], dtype=torch.float64)
    if a.strategy == "ddp":
        dist.all_reduce(rss, op=dist.ReduceOp.MAX)
    times.sort()
    if rank == 0:
        print(json.dumps({"framework": "pytorch-" + torch.__version__, "strategy": a.strategy, "ranks": world,
                          "params": params, "batch": a.batch, "seq": a.seq, "dtype": a.dtype,
                          "step_s": round(times[len(times) // 2], 3),
                          "tokens_per_s": round(a.batch * a.seq * world / times[len(times) // 2], 1),
                          "peak_rss_bytes": rss[0].item(), "rss_anon_bytes": rss[1].item()}))


if __name__ == "__main__":
    main()
