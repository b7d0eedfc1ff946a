#!/usr/bin/env python3
"""Shares of a training step's CPU samples by kind of work, from `perf script` of one rank.

Reads `perf script` text (record with -g and DNNL_JIT_PROFILE=2 so oneDNN's kernels are named) on
stdin. Keeps the samples of the last FRACTION of the span in which matmul kernels ran (the
measured steps: no warm-up, no weight initialization, no peak loops before or after), over every
thread of the process, and names each sample by the first frame, leaf first, that matches a
kind below; the communication thread's samples are its own kind.

  perf script -F comm,pid,tid,time,ip,sym,dso -i perf0.data | bench/step_profile.py [--fraction 0.55] [--top 5]

--top N also lists each kind's N most sampled frames: the frame that named the kind (the first
matching one from the leaf), or the leaf where none did (and for the communication thread).
"""
import argparse
import re
import sys

# (kind, pattern over a frame's symbol), tried in order for each frame from the leaf up.
KINDS = [
    ("peak loop (outside the steps)", re.compile(r"fma_chunk|bf16_chunk|peak_flops")),
    ("matmul (oneDNN kernels and operand packing)",
     re.compile(r"jit_brgemm|brgemm|jit_uni_reorder|jit_avx512_core.*gemm|jit_avx2.*sgemm|"
                r"jit_avx2_f32_copy|matmul|gemm_convolution")),
    ("attention (fused kernel)",
     re.compile(r"attention|block_gemm|dp_tile|online_softmax|probabilities_and_grads", re.I)),
    ("AdamW step", re.compile(r"adam|Adam")),
    ("layer norm", re.compile(r"layer_norm|lnorm|layer_normalization")),
    ("reductions", re.compile(r"kernels::.*reduce|sum_to|reduce_")),
    ("copies and casts", re.compile(r"kernels::.*copy|copy_|::to\(|cast")),
    ("elementwise", re.compile(r"run_plan_range|binary|unary|pointwise|gelu|where|addcmul")),
    ("kernel page clearing", re.compile(r"clear_page")),
    ("allocator", re.compile(r"malloc|free|Allocator|allocate|page_extent|mremap|munmap|mmap")),
]
COMM = "communication thread (MPI copies, reductions, polling)"


def samples(stream):
    header = re.compile(r"^(\S.*?)\s+(\d+)/(\d+)\s+([\d.]+):|^(\S.*?)\s+(\d+)\s+([\d.]+):")
    current = None
    for line in stream:
        if not line.strip():
            if current:
                yield current
            current = None
            continue
        if current is None:
            m = header.match(line)
            if not m:
                continue
            if m.group(2):
                pid, tid, t = int(m.group(2)), int(m.group(3)), float(m.group(4))
            else:
                pid = tid = int(m.group(6))
                t = float(m.group(7))
            current = {"pid": pid, "tid": tid, "time": t, "frames": []}
        else:
            parts = line.strip().split(None, 1)
            if len(parts) == 2:
                current["frames"].append(parts[1])
    if current:
        yield current


def kind_and_frame(sample, main_tids):
    for frame in sample["frames"]:
        for kind, pattern in KINDS:
            if pattern.search(frame):
                return kind, frame
    leaf = sample["frames"][0] if sample["frames"] else "?"
    if sample["tid"] not in main_tids:
        return COMM, leaf
    return "other (autograd engine, modules, kernel)", leaf


def kind_of(sample, main_tids):
    return kind_and_frame(sample, main_tids)[0]


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fraction", type=float, default=0.55)
    ap.add_argument("--top", type=int, default=0, help="list each kind's N most sampled frames")
    args = ap.parse_args()
    if args.top < 0:
        sys.exit("step_profile.py: --top must be 0 or more")
    all_samples = list(samples(sys.stdin))
    if not all_samples:
        sys.exit("step_profile.py: no samples on stdin (perf script output expected)")
    matmul_kind = KINDS[1][0]
    main_tids = {s["pid"] for s in all_samples}
    # Threads running matmuls are compute threads (OpenMP workers included).
    matmul_times = []
    for s in all_samples:
        if kind_of(s, main_tids) == matmul_kind:
            matmul_times.append(s["time"])
            main_tids.add(s["tid"])
    if not matmul_times:
        sys.exit("step_profile.py: no matmul samples; was DNNL_JIT_PROFILE=2 set?")
    first, last = min(matmul_times), max(matmul_times)
    start = last - args.fraction * (last - first)
    window = [s for s in all_samples if start <= s["time"] <= last]
    counts, frames = {}, {}
    for s in window:
        k, frame = kind_and_frame(s, main_tids)
        if s["tid"] not in main_tids and k not in (matmul_kind,):
            k, frame = COMM, s["frames"][0] if s["frames"] else "?"
        counts[k] = counts.get(k, 0) + 1
        by_frame = frames.setdefault(k, {})
        frame = re.sub(r"\+0x[0-9a-f]+", "", frame)[:120]
        by_frame[frame] = by_frame.get(frame, 0) + 1
    total = sum(counts.values())
    print(f"{total} samples from {start:.2f} s to {last:.2f} s")
    for k, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"| {k} | {100.0 * n / total:.1f}% |")
        for frame, m in sorted(frames[k].items(), key=lambda kv: -kv[1])[:args.top]:
            print(f"|   {frame} | {100.0 * m / total:.1f}% |")


if __name__ == "__main__":
    main()
