#!/usr/bin/python3
"""Side-by-side model benchmark: strider vs PyTorch 1.13 (Debian python3-torch +
python3-torchvision), same model, batch, threads, memory format and dtype, in one run.

    bench/compare_models_pytorch.py [--strider build/tools/strider] [--model resnet50]
        [--batch 16] [--threads 2] [--steps 3] [--rounds 3] [--modes train,infer]
        [--dtypes float32,bfloat16] [--formats contiguous,channels_last] [--openblas] [--autotune]

The machine's speed drifts 2-3x between runs, so everything is interleaved: for each mode and
dtype, --rounds rounds, each running every memory format in both libraries (the order reversed
every other round); the ratio strider/PyTorch (< 1 means strider is faster) and each library's
channels-last speedup over its own contiguous run are medians of the per-round ratios, each
taken from runs next to each other in time. It prints the CPU model first, each library's median
ms/step, that ratio and its range, and the speedups with their ranges. bfloat16 in PyTorch is CPU autocast; in strider, bfloat16 compute with
float32 master weights. --openblas runs PyTorch with OpenBLAS as its BLAS (Debian's default is
the reference BLAS), with OPENBLAS_CORETYPE=SkylakeX, which OpenBLAS 0.3.21 needs on this CPU.
--autotune runs strider with STRIDER_AUTOTUNE=1 (each convolution shape's fastest oneDNN
implementation, timed on first use). --max-isa avx2 caps both libraries at AVX2, as on a CPU
without AVX-512 (STRIDER_MAX_CPU_ISA for strider; ONEDNN_MAX_CPU_ISA and ATEN_CPU_CAPABILITY for
PyTorch). PyTorch is skipped when it is not installed.
"""
import argparse
import json
import os
import subprocess
import sys

TORCH_SNIPPET = r'''
import json, sys, time, torch, torchvision
cfg = json.loads(sys.argv[1])
torch.set_num_threads(cfg["threads"])
torch.manual_seed(0)
model = getattr(torchvision.models, cfg["model"])()
fmt = torch.channels_last if cfg["memory_format"] == "channels_last" else torch.contiguous_format
model = model.to(memory_format=fmt)
x = torch.randn(cfg["batch"], 3, 224, 224).contiguous(memory_format=fmt)
y = torch.zeros(cfg["batch"], dtype=torch.long)
opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
bf16 = cfg["dtype"] == "bfloat16"
train = cfg["mode"] == "train"
if not train:
    model.eval()
def step():
    with torch.autocast("cpu", dtype=torch.bfloat16, enabled=bf16):
        if train:
            loss = torch.nn.functional.cross_entropy(model(x).float(), y)
        else:
            with torch.no_grad():
                model(x)
            return
    opt.zero_grad()
    loss.backward()
    opt.step()
for _ in range(cfg["warmup"]):
    step()
ms = []
for _ in range(cfg["steps"]):
    t0 = time.perf_counter(); step(); ms.append((time.perf_counter() - t0) * 1000)
ms.sort()
print(json.dumps({"ms_per_step": ms[len(ms) // 2]}))
'''


def run_strider(args, cfg):
    cmd = [args.strider, "bench", "model", "--model", cfg["model"], "--mode", cfg["mode"], "--batch", str(cfg["batch"]),
           "--memory-format", cfg["memory_format"], "--dtype", cfg["dtype"], "--threads", str(cfg["threads"]),
           "--warmup", str(cfg["warmup"]), "--steps", str(cfg["steps"]), "--json"]
    env = dict(os.environ, STRIDER_AUTOTUNE="1" if args.autotune else "0")
    if args.max_isa:
        env["STRIDER_MAX_CPU_ISA"] = args.max_isa
    return json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True, env=env).stdout)["ms_per_step"]


def run_torch(cfg, openblas, max_isa=None):
    env = dict(os.environ)
    if max_isa:
        env["ONEDNN_MAX_CPU_ISA"] = {"avx2": "AVX2", "avx512": "AVX512_CORE",
                                     "avx512_bf16": "AVX512_CORE_BF16"}.get(max_isa, "ALL")
        env["ATEN_CPU_CAPABILITY"] = "avx2" if max_isa == "avx2" else "avx512"
    if openblas:
        env["LD_LIBRARY_PATH"] = "/usr/lib/x86_64-linux-gnu/openblas-openmp"
        env["OPENBLAS_CORETYPE"] = "SkylakeX"
    else:
        env.pop("OPENBLAS_CORETYPE", None)
    r = subprocess.run(["/usr/bin/python3", "-c", TORCH_SNIPPET, json.dumps(cfg)], capture_output=True, text=True, env=env)
    if r.returncode != 0:
        return None
    return json.loads(r.stdout.strip().splitlines()[-1])["ms_per_step"]


def cpu_model():
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    name = line.split(":", 1)[1].strip()
                    break
            else:
                name = "unknown CPU"
        with open("/proc/cpuinfo") as f:
            flags = next((l.split(":", 1)[1].split() for l in f if l.startswith("flags")), [])
        isa = [f for f in ("avx512f", "avx512_bf16", "avx512_fp16", "amx_bf16") if f in flags]
        return f"{name} ({', '.join(isa) or 'no AVX-512'}), {os.cpu_count()} logical CPUs"
    except OSError:
        return "unknown CPU"


def median(xs):
    xs = sorted(xs)
    n = len(xs)
    return xs[n // 2] if n % 2 else 0.5 * (xs[n // 2 - 1] + xs[n // 2])


def interleaved(args, cfgs, have_torch):
    """Runs every configuration of `cfgs` (one per memory format) for both libraries in each round,
    the order reversed every other round, so that the ratios between libraries and between formats
    are each taken from runs next to each other in time (a shared host drifts 2-3x between minutes).
    Returns, per configuration, the lists of strider and PyTorch ms, one entry per round."""
    runs = [(i, lib) for i in range(len(cfgs)) for lib in (("strider", "torch") if have_torch else ("strider",))]
    out = [{"strider": [], "torch": []} for _ in cfgs]
    for r in range(args.rounds):
        for i, lib in (runs if r % 2 == 0 else reversed(runs)):
            ms = run_strider(args, cfgs[i]) if lib == "strider" else run_torch(cfgs[i], args.openblas, args.max_isa)
            out[i][lib].append(ms)
    return out


def ratio_summary(num, den):
    """Median and range of the per-round ratios num[r] / den[r] (rounds where both ran)."""
    ratios = [a / b for a, b in zip(num, den) if a and b]
    if not ratios:
        return None
    return median(ratios), min(ratios), max(ratios)


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--strider", default="build/tools/strider")
    p.add_argument("--model", default="resnet50")
    p.add_argument("--batch", type=int, default=16)
    p.add_argument("--threads", type=int, default=2)
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--warmup", type=int, default=1)
    p.add_argument("--modes", default="train,infer")
    p.add_argument("--dtypes", default="float32,bfloat16")
    p.add_argument("--rounds", type=int, default=3)
    p.add_argument("--formats", default="contiguous,channels_last")
    p.add_argument("--openblas", action="store_true")
    p.add_argument("--autotune", action="store_true")
    p.add_argument("--max-isa", choices=["avx2", "avx512", "avx512_bf16", "amx_bf16"])
    args = p.parse_args()
    have_torch = subprocess.run(["/usr/bin/python3", "-c", "import torch, torchvision"], capture_output=True).returncode == 0
    if not have_torch:
        print("PyTorch/torchvision not installed (apt-get install python3-torch python3-torchvision): strider only")
    print(f"CPU: {cpu_model()}; {args.threads} threads each; {args.rounds} interleaved rounds of {args.steps} steps; "
          f"strider autotune {'on' if args.autotune else 'off'}"
          + (f"; both capped at {args.max_isa}" if args.max_isa else ""))
    print(f"{'mode':6} {'dtype':9} {'format':14} {'strider ms':>11} {'pytorch ms':>11} {'strider/pytorch':>16}  range")
    formats = args.formats.split(",")
    for mode in args.modes.split(","):
        for dtype in args.dtypes.split(","):
            cfgs = [dict(model=args.model, mode=mode, batch=args.batch, memory_format=fmt, dtype=dtype,
                         threads=args.threads, warmup=args.warmup, steps=args.steps) for fmt in formats]
            runs = interleaved(args, cfgs, have_torch)
            for fmt, run in zip(formats, runs):
                torch_ms = [x for x in run["torch"] if x]  # a failed PyTorch run is None
                s, t = median(run["strider"]), median(torch_ms) if torch_ms else None
                r = ratio_summary(run["strider"], run["torch"])
                rs = f"{r[0]:16.2f}  {r[1]:.2f}-{r[2]:.2f}" if r else f"{'n/a':>16}"
                tt = f"{t:11.1f}" if t else f"{'n/a':>11}"
                print(f"{mode:6} {dtype:9} {fmt:14} {s:11.1f} {tt} {rs}", flush=True)
            if "contiguous" not in formats or "channels_last" not in formats:
                continue
            c, l = runs[formats.index("contiguous")], runs[formats.index("channels_last")]
            g = ratio_summary(c["strider"], l["strider"])
            line = (f"  channels-last speedup over contiguous ({mode}, {dtype}), per round: "
                    f"strider {g[0]:.2f}x ({g[1]:.2f}-{g[2]:.2f})")
            gt = ratio_summary(c["torch"], l["torch"])
            if gt:
                line += f", pytorch {gt[0]:.2f}x ({gt[1]:.2f}-{gt[2]:.2f})"
            print(line, flush=True)


if __name__ == "__main__":
    sys.exit(main())
