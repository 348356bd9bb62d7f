#!/usr/bin/env python3
# DeepSpeed's WarmupLR / WarmupDecayLR / WarmupCosineLR (deepspeed/runtime/lr_schedules.py) as its engine drives
# them: the lr each optimizer step uses, printed as the C++ table in tests/optim/lr_scheduler_test.cpp.
# Plain Python (no DeepSpeed, no torch): the classes' arithmetic restated over one parameter group.
import math
import sys


class Group:
    def __init__(self, lr):
        self.lr = lr


def warmup_gamma(it, warmup, warmup_type):
    if warmup_type == "log":
        return (1.0 / math.log(warmup)) * math.log(it + 1)
    return it / warmup


class WarmupLR:
    def __init__(self, group, warmup_min_lr=0.0, warmup_max_lr=None, warmup_num_steps=1000, warmup_type="log"):
        self.group = group
        self.min_lr = warmup_min_lr
        self.max_lr = group.lr if warmup_max_lr is None else warmup_max_lr
        self.warmup = max(2, warmup_num_steps)
        self.warmup_type = warmup_type
        self.it = -1
        self.group.lr = self.get_lr()

    def gamma(self):
        if self.it < self.warmup:
            return warmup_gamma(self.it, self.warmup, self.warmup_type)
        return 1.0

    def get_lr(self):
        if self.it < 0:
            return self.min_lr
        return self.min_lr + (self.max_lr - self.min_lr) * self.gamma()

    def step(self):
        self.it += 1
        self.group.lr = self.get_lr()


class WarmupDecayLR(WarmupLR):
    def __init__(self, group, total_num_steps, **kwargs):
        self.total = total_num_steps
        super().__init__(group, **kwargs)

    def gamma(self):
        if self.it < self.warmup:
            return warmup_gamma(self.it, self.warmup, self.warmup_type)
        return max(0.0, float(self.total - self.it) / float(max(1.0, self.total - self.warmup)))


class WarmupCosineLR:
    def __init__(self, group, total_num_steps, warmup_min_ratio=0.0, warmup_num_steps=1000, cos_min_ratio=0.0001,
                 warmup_type="log"):
        self.group = group
        self.total = total_num_steps
        self.warmup_min_ratio = warmup_min_ratio
        self.warmup = max(2, warmup_num_steps)
        self.cos_min_ratio = cos_min_ratio
        self.warmup_type = warmup_type
        self.org_lr = group.lr
        self.it = -1
        self.group.lr = self.get_lr()

    def ratio(self):
        if self.it < self.warmup:
            r = warmup_gamma(self.it, self.warmup, self.warmup_type)
            return self.warmup_min_ratio + r * (1.0 - self.warmup_min_ratio)
        real_last_step = self.it - self.warmup + 1
        real_total_steps = self.total - self.warmup
        r = (1 + math.cos(math.pi * real_last_step / real_total_steps)) / 2
        return max(0.0, self.cos_min_ratio + (1.0 - self.cos_min_ratio) * r)

    def get_lr(self):
        if self.it < 0:
            return 0.0
        return self.org_lr * self.ratio()

    def step(self):
        self.it += 1
        self.group.lr = self.get_lr()


# name, optimizer lr, constructor, C++ options, steps
CASES = [
    ("WarmupLR", 1e-3, lambda g: WarmupLR(g, 1e-5, 1e-3, 10, "log"), 20),
    ("WarmupLR", 5e-5, lambda g: WarmupLR(g, 0.0, None, 10, "linear"), 15),
    ("WarmupDecayLR", 2e-5, lambda g: WarmupDecayLR(g, 30, warmup_min_lr=0.0, warmup_max_lr=2e-5,
                                                    warmup_num_steps=5, warmup_type="linear"), 35),
    ("WarmupDecayLR", 1e-4, lambda g: WarmupDecayLR(g, 12, warmup_min_lr=1e-6, warmup_max_lr=1e-4,
                                                    warmup_num_steps=1, warmup_type="log"), 15),
    ("WarmupCosineLR", 1e-3, lambda g: WarmupCosineLR(g, 40, 0.1, 8, 1e-4, "log"), 45),
    ("WarmupCosineLR", 3e-4, lambda g: WarmupCosineLR(g, 20, 0.0, 0, 0.01, "linear"), 20),
]


def main():
    out = sys.stdout
    for name, lr, make, steps in CASES:
        group = Group(lr)
        scheduler = make(group)
        lrs = []
        for _ in range(steps):
            lrs.append(group.lr)  # the optimizer step uses this lr, then the engine steps the scheduler
            scheduler.step()
        out.write("    // %s\n    {%s},\n" % (name, ", ".join("%.17g" % v for v in lrs)))


if __name__ == "__main__":
    main()
