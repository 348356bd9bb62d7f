#!/usr/bin/env python3
# purpose: the speed baseline for bench/tokenizer_bench with the pinned oracle itself: HF tokenizers 0.23.3 from
# PyPI (scripts/requirements.txt) encoding every SpamAssassin email with encode_batch. Same arguments and output
# as bench/tokenizer_bench.mjs: prints {"seconds", "load_seconds", "bytes", "emails"} (best of REPS runs) and
# writes the ids and offsets of every email to OUT for berth to compare against.
# usage: scripts/python bench/tokenizer_bench.py NODE_MODULES TOKENIZER_DIR OUT REPS
# Single-threaded when run with TOKENIZERS_PARALLELISM=false (RAYON_NUM_THREADS=1 also limits rayon's pool).

import json
import os
import struct
import sys
import time

from tokenizers import Tokenizer


def emails(modules):
    root = os.path.join(modules, "@stdlib", "datasets-spam-assassin", "data")
    texts = []
    for group in ["easy-ham-1", "easy-ham-2", "hard-ham-1", "spam-1", "spam-2"]:
        for name in sorted(f for f in os.listdir(os.path.join(root, group)) if f.endswith(".json")):
            with open(os.path.join(root, group, name), encoding="utf-8") as f:
                texts.append(json.load(f)["text"])
    return texts


def main():
    modules, tokenizer_dir, out, reps = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4])
    texts = emails(modules)
    start = time.perf_counter()
    tokenizer = Tokenizer.from_file(os.path.join(tokenizer_dir, "tokenizer.json"))
    load_seconds = time.perf_counter() - start
    best, encodings = float("inf"), None
    for _ in range(reps):
        start = time.perf_counter()
        encodings = tokenizer.encode_batch(texts)
        best = min(best, time.perf_counter() - start)
    # Per email: uint32 count, then count ids, then count (start, end) pairs, little-endian (as the .mjs).
    with open(out, "wb") as f:
        for e in encodings:
            flat = [o for pair in e.offsets for o in pair]
            f.write(struct.pack(f"<I{len(e.ids)}I{len(flat)}I", len(e.ids), *e.ids, *flat))
    print(json.dumps({"seconds": best, "load_seconds": load_seconds,
                      "bytes": sum(len(t.encode("utf-8")) for t in texts), "emails": len(texts)}))


if __name__ == "__main__":
    main()
