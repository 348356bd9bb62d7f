#!/usr/bin/env python3
# purpose: this machine's matmul peak through torch (MKL sgemm for float32, oneDNN/MKL for bfloat16): the
# best GFLOP/s of REPS square n x n x n matmuls, per thread count, so that benchmark figures can be stated as
# a fraction of it. Prints one JSON line per (dtype, n, threads).
#
# Usage: OMP_WAIT_POLICY=PASSIVE scripts/python bench/matmul_peak.py [--sizes 2048 4096] [--threads 1 2]
#        [--dtypes float32 bfloat16] [--reps 5]

import argparse
import json
import time

import torch


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--sizes", type=int, nargs="+", default=[2048, 4096])
    ap.add_argument("--threads", type=int, nargs="+", default=[1, 2])
    ap.add_argument("--dtypes", nargs="+", default=["float32", "bfloat16"])
    ap.add_argument("--reps", type=int, default=5)
    a = ap.parse_args()
    for dtype in a.dtypes:
        for n in a.sizes:
            torch.manual_seed(0)
            x = torch.randn(n, n).to(getattr(torch, dtype))
            y = torch.randn(n, n).to(getattr(torch, dtype))
            out = torch.empty(n, n, dtype=x.dtype)
            for threads in a.threads:
                torch.set_num_threads(threads)
                torch.mm(x, y, out=out)  # warm-up
                times = []
                for _ in range(a.reps):
                    t0 = time.perf_counter()
                    torch.mm(x, y, out=out)
                    times.append(time.perf_counter() - t0)
                flop = 2.0 * n ** 3
                print(json.dumps({"dtype": dtype, "n": n, "threads": threads, "reps": a.reps,
                                  "best_gflops": flop / min(times) * 1e-9,
                                  "median_gflops": flop / sorted(times)[len(times) // 2] * 1e-9,
                                  "torch": torch.__version__}), flush=True)


if __name__ == "__main__":
    main()
