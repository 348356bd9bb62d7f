# Goldens for berth's LossScaler: DeepSpeed's DynamicLossScaler.update_scale, copied verbatim below from
# deepspeed/runtime/fp16/loss_scaler.py (rank 0, dtype torch.half; logger.info replaced by a list of lines,
# torch and deepspeed.comm not needed), run over overflow/no-overflow sequences. Each case records, per step,
# the scale in use, the scale and hysteresis after update_scale, the log line, and where it raises at the
# minimum scale.
import json
import os
import random
import sys


class DynamicLossScaler:
    def __init__(self,
                 init_scale=2**32,
                 scale_factor=2.,
                 scale_window=1000,
                 min_scale=1,
                 delayed_shift=1,
                 consecutive_hysteresis=False,
                 raise_error_at_min_scale=True):
        self.cur_scale = init_scale
        self.cur_iter = 0
        self.last_overflow_iter = -1
        self.scale_factor = scale_factor
        self.scale_window = scale_window
        self.min_scale = min_scale
        self.delayed_shift = delayed_shift
        self.cur_hysteresis = delayed_shift
        self.consecutive_hysteresis = consecutive_hysteresis
        self.raise_error_at_min_scale = raise_error_at_min_scale
        self.log = []

    # `overflow` is boolean indicating whether the gradient overflowed
    def update_scale(self, overflow):
        if overflow:
            # self.cur_scale /= self.scale_factor
            if self.delayed_shift == 1 or self.cur_hysteresis == 1:
                if (self.cur_scale == self.min_scale) and self.raise_error_at_min_scale:
                    raise Exception(
                        "Current loss scale already at minimum - cannot decrease scale anymore. Exiting run.")
                else:
                    next_scale = max(self.cur_scale / self.scale_factor, self.min_scale)
                    overflow_msg = f"[deepspeed] OVERFLOW! Rank {0} Skipping step."
                    overflow_msg += f" Attempted loss scale: {int(self.cur_scale)}, reducing to {int(next_scale)}"
                    self.log.append(overflow_msg)
                    self.cur_scale = next_scale
            else:
                overflow_msg = f"[deepspeed] OVERFLOW! Rank {0} Skipping step."
                overflow_msg += f" Attempted loss scale: {int(self.cur_scale)}, but hysteresis is {self.cur_hysteresis}. Reducing hysteresis to {self.cur_hysteresis-1}"
                self.log.append(overflow_msg)
                self.cur_hysteresis -= 1
            self.last_overflow_iter = self.cur_iter
        else:
            if self.consecutive_hysteresis:
                self.cur_hysteresis = self.delayed_shift
            if (self.cur_iter - self.last_overflow_iter) % self.scale_window == 0:
                if not self.consecutive_hysteresis:
                    self.cur_hysteresis = self.delayed_shift
                self.cur_scale *= self.scale_factor
        self.cur_iter += 1


def run(name, power, window, hysteresis, consecutive, min_scale, overflows):
    # DeepSpeed's engine builds the scaler from the fp16 block: init_scale = 2**initial_scale_power,
    # scale_window = loss_scale_window, delayed_shift = hysteresis, min_scale = min_loss_scale.
    scaler = DynamicLossScaler(init_scale=2**power, scale_window=window, min_scale=min_scale,
                               delayed_shift=hysteresis, consecutive_hysteresis=consecutive)
    steps = []
    raised_at = None
    for i, overflow in enumerate(overflows):
        before = scaler.cur_scale
        scaler.log = []
        try:
            scaler.update_scale(overflow)
        except Exception:
            raised_at = i
            break
        steps.append({"overflow": overflow, "scale": before, "new_scale": scaler.cur_scale,
                      "hysteresis": scaler.cur_hysteresis, "cur_iter": scaler.cur_iter,
                      "last_overflow_iter": scaler.last_overflow_iter,
                      "log": scaler.log[0] if scaler.log else ""})
    return {"name": name, "initial_scale_power": power, "loss_scale_window": window, "hysteresis": hysteresis,
            "consecutive_hysteresis": consecutive, "min_loss_scale": min_scale, "steps": steps,
            "raised_at": raised_at}


def main():
    out = sys.argv[1]
    T, F = True, False
    pattern = [F, F, F, T, F, F, F, F, T, F, T, F, F, F, F, F, F, T, T, T, F, F, F, F]
    cases = [
        run("window3_hysteresis1", 4, 3, 1, F, 1, pattern),
        run("window3_hysteresis2", 4, 3, 2, F, 1, pattern),
        run("window3_hysteresis2_consecutive", 4, 3, 2, T, 1, pattern),
        run("min_scale_hit_hysteresis1", 2, 3, 1, F, 1, [F, T, T, T, T, F]),
        run("min_scale_hit_hysteresis2", 1, 3, 2, F, 1, [T, T, T, F, T, T, T]),
        run("min_scale_not_power_of_two", 3, 1000, 1, F, 3, [T, T, F, T]),
    ]
    rng = random.Random(6)
    long_run = [rng.random() < 0.3 for _ in range(300)]
    cases.append(run("random_window5_hysteresis3", 16, 5, 3, F, 1, long_run))
    cases.append(run("random_window5_hysteresis3_consecutive", 16, 5, 3, T, 1, long_run))
    os.makedirs(os.path.dirname(out), exist_ok=True)
    with open(out, "w") as f:
        json.dump({"cases": cases}, f, indent=1)


if __name__ == "__main__":
    main()
