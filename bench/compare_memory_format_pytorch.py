#!/usr/bin/python3
"""Side-by-side: strider's memory-format kernels vs PyTorch 1.13 (Debian python3-torch) on the
same machine, same thread count, same shapes, in one run. Prints PyTorch time / strider time
(> 1 means strider is faster). Skips PyTorch when it is not installed.

    bench/compare_memory_format_pytorch.py [path/to/strider_bench_memory_format]
"""
import json
import subprocess
import sys
import time

BENCH = sys.argv[1] if len(sys.argv) > 1 else "build/bench/strider_bench_memory_format"
THREADS = 2


def strider_times():
    out = subprocess.run([BENCH, "--benchmark_format=json"], check=True, capture_output=True, text=True).stdout
    data = json.loads(out)
    unit = {"ns": 1e-9, "us": 1e-6, "ms": 1e-3, "s": 1.0}
    times = {}
    for b in data["benchmarks"]:
        name = b["name"].split("/")[0]
        times[name] = b["real_time"] * unit[b["time_unit"]]
    return times


def best_of(fn, reps, warmup=3):
    for _ in range(warmup):
        fn()
    best = float("inf")
    for _ in range(5):
        t0 = time.perf_counter()
        for _ in range(reps):
            fn()
        best = min(best, (time.perf_counter() - t0) / reps)
    return best


def torch_times():
    try:
        import torch
    except ImportError:
        return None
    torch.set_num_threads(THREADS)
    shape = (32, 256, 56, 56)
    cl = torch.channels_last
    x, y = torch.rand(shape), torch.rand(shape)
    xcl = torch.rand(shape).contiguous(memory_format=cl)
    ycl = torch.rand(shape).contiguous(memory_format=cl)
    dst_cl = torch.empty(shape).contiguous(memory_format=cl)
    dst = torch.empty(shape)
    out, out_cl = torch.empty(shape), torch.empty(shape).contiguous(memory_format=cl)
    a1, b1 = torch.ones(1), torch.ones(1)
    return {
        "version": torch.__version__,
        "BM_CopyNCHWtoNHWC": best_of(lambda: dst_cl.copy_(x), 10),
        "BM_CopyNHWCtoNCHW": best_of(lambda: dst.copy_(xcl), 10),
        "BM_AddContiguous": best_of(lambda: torch.add(x, y, out=out), 10),
        "BM_AddChannelsLast": best_of(lambda: torch.add(xcl, ycl, out=out_cl), 10),
        "BM_AddOneElement": best_of(lambda: torch.add(a1, b1), 20000),
    }


def main():
    ours = strider_times()
    theirs = torch_times()
    if theirs is None:
        print("PyTorch not installed (apt-get install python3-torch): comparison skipped")
        return
    print(f"strider vs PyTorch {theirs['version']} ({THREADS} threads), PyTorch time / strider time:")
    for name in ["BM_CopyNCHWtoNHWC", "BM_CopyNHWCtoNCHW", "BM_AddContiguous", "BM_AddChannelsLast",
                 "BM_AddOneElement"]:
        unit, scale = ("ns", 1e9) if name == "BM_AddOneElement" else ("ms", 1e3)
        print(f"  {name:22s} strider {ours[name] * scale:9.2f} {unit}  pytorch {theirs[name] * scale:9.2f} {unit}"
              f"  ratio {theirs[name] / ours[name]:.2f}")


if __name__ == "__main__":
    main()
