#!/usr/bin/env python3
# What torch.utils.data.DistributedSampler itself (torch==2.15.0, pinned in scripts/requirements.txt) yields for
# a grid of (N, world_size, rank, drop_last, shuffle, seed, epoch), with berth's shuffle in place of
# torch.randperm: berth keeps torch's padding and striding rules but shuffles with SplitMix64 + Fisher-Yates
# (the same on every platform and torch version), implemented here independently in Python; the padding,
# striding and seed + epoch rules are torch's own code.
#
# Usage (run with scripts/python): distributed_sampler_goldens.py OUT.json
import json
import sys

import torch
import torch.utils.data.distributed as distributed

MASK = (1 << 64) - 1


def splitmix_permutation(seed, n):
    state = seed & MASK

    def next_u64():
        nonlocal state
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        return z ^ (z >> 31)

    def below(bound):
        limit = MASK - MASK % bound
        value = next_u64()
        while value >= limit:
            value = next_u64()
        return value % bound

    order = list(range(n))
    for i in range(n, 1, -1):
        j = below(i)
        order[i - 1], order[j] = order[j], order[i - 1]
    return order


def berth_randperm(n, generator=None, **kwargs):
    # DistributedSampler seeds its generator with seed + epoch; berth seeds SplitMix64 with the same number.
    return torch.tensor(splitmix_permutation(generator.initial_seed(), n), dtype=torch.int64)


def main():
    distributed.torch.randperm = berth_randperm
    cases = []
    for n in (0, 1, 5, 10, 12, 13):
        for world in (1, 2, 3, 4, 16):
            for drop_last in (False, True):
                for shuffle, seed, epoch in ((False, 0, 0), (True, 0, 0), (True, 0, 1), (True, 42, 3)):
                    for rank in range(world):
                        sampler = distributed.DistributedSampler(list(range(n)), num_replicas=world, rank=rank,
                                                                 shuffle=shuffle, seed=seed, drop_last=drop_last)
                        sampler.set_epoch(epoch)
                        cases.append({"n": n, "world_size": world, "rank": rank, "drop_last": drop_last,
                                      "shuffle": shuffle, "seed": seed, "epoch": epoch,
                                      "num_samples": len(sampler), "indices": list(iter(sampler))})
    with open(sys.argv[1], "w") as f:
        json.dump({"cases": cases}, f)


if __name__ == "__main__":
    main()
