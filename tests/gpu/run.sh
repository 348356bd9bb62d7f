#!/usr/bin/env bash
# GPU check, for a machine with a CUDA torch (a pip torch 2.x): builds berth against it, runs the suite
# (CUDA-only tests run instead of skipping) and the checks that need real GPUs: placement cpu<->cuda, training on
# cuda:0 in fp32, bf16 and fp16 (loss scaling), ZeRO-1 with pinned CPU offload over NCCL at world size 1, DDP and
# ZeRO on 2 ranks, `berth predict` on CUDA, berth's bf16 bert-base training step against transformers' (samples/s
# and MFU) and, in the suite, the fused attention against eager on the GPU. A few minutes.
# PYTHON must have torch and the test oracles of scripts/requirements.txt (transformers, accelerate, tokenizers,
# safetensors, deepspeed, scikit-learn), which compute the goldens at build time; on a machine without a registry,
# bring them as wheels.
# Needs nlohmann-json, CLI11 and GoogleTest headers/libraries; BERTH_GPU_DEPS=DIR adds DIR/include and DIR/lib.
set -euo pipefail
cd "$(dirname "$0")/../.."
py=${PYTHON:-python3}
torch_prefix=$("$py" -c 'import torch; print(torch.utils.cmake_prefix_path)')
extra=()
if [ -n "${BERTH_GPU_DEPS:-}" ]; then
  extra+=("-DCMAKE_PREFIX_PATH=$BERTH_GPU_DEPS;$torch_prefix" "-DCMAKE_CXX_FLAGS=-isystem $BERTH_GPU_DEPS/include")
else
  extra+=("-DCMAKE_PREFIX_PATH=$torch_prefix")
fi
# The model goldens need a python with torch: the one whose libtorch this build uses will do.
cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DBERTH_BUILD_BENCH=OFF \
  -DBERTH_PYTHON="$(command -v "$py")" "${extra[@]}"
cmake --build build-gpu -j "$(nproc)"
grep -q '#define BERTH_WITH_CUDA 1' build-gpu/include/berth/config.h || { echo "gpu: torch has no CUDA"; exit 1; }

berth=build-gpu/bin/berth
"$berth" doctor
count=$("$berth" doctor --json | "$py" -c 'import json,sys; d=json.load(sys.stdin); print(d["cuda"]["device_count"])')
[ "$count" -ge 1 ] || { echo "gpu: doctor sees no CUDA device"; exit 1; }
"$berth" doctor --device "cuda:$((count - 1))" >/dev/null
if "$berth" doctor --device "cuda:$count" >/tmp/berth-gpu.out 2>&1; then
  echo "gpu: cuda:$count should not exist"; exit 1
fi
grep -q "only $count CUDA device" /tmp/berth-gpu.out || { cat /tmp/berth-gpu.out; exit 1; }
# Two local ranks on one GPU is refused unless allowed.
if [ "$count" -eq 1 ]; then
  LOCAL_RANK=1 RANK=1 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 "$berth" doctor >/dev/null 2>&1 && { echo "gpu: shared GPU accepted"; exit 1; }
  LOCAL_RANK=1 RANK=1 WORLD_SIZE=2 LOCAL_WORLD_SIZE=2 "$berth" doctor --allow-shared-device >/dev/null
fi
# berth predict on the GPU gives the CPU's predictions (the golden tiny model), and doctor --model places it there.
golden=build-gpu/tests/goldens
"$berth" predict --model $golden/tiny_bert_classifier --input $golden/tiny_bert_classifier_predict/input.jsonl \
  --device cpu >/tmp/berth-predict-cpu.jsonl
"$berth" predict --model $golden/tiny_bert_classifier --input $golden/tiny_bert_classifier_predict/input.jsonl \
  --device cuda:0 >/tmp/berth-predict-gpu.jsonl
"$py" - <<'PY'
import json
cpu = [json.loads(l) for l in open("/tmp/berth-predict-cpu.jsonl")]
gpu = [json.loads(l) for l in open("/tmp/berth-predict-gpu.jsonl")]
assert len(cpu) == len(gpu) > 0
for a, b in zip(cpu, gpu):
    assert a["label"] == b["label"], (a, b)
    assert max(abs(x - y) for x, y in zip(a["logits"], b["logits"])) < 1e-4, (a, b)
print("gpu: predict on cuda:0 matches cpu")
PY
"$berth" doctor --json --device cuda:0 --model $golden/tiny_bert_classifier |
  "$py" -c 'import json,sys; g=json.load(sys.stdin)["model"]["groups"]; assert [x["device"] for x in g]==["cuda:0"], g'
# The Trainer on the GPU: a checkpoint written on the CPU resumes on cuda:0 (its optimizer state is read onto the
# CPU and follows its parameters to the GPU), and model_init's model built elsewhere is placed on the run's GPU.
work=$(mktemp -d)
"$py" - "$work" <<'PY'
import json, sys
with open(sys.argv[1] + "/train.jsonl", "w") as f:
    for i in range(32):
        spam = i % 2 == 0
        f.write(json.dumps({"text": "free prize click now" if spam else "meeting report review", "label": "spam" if spam else "ham"}) + "\n")
PY
"$berth" train --model $golden/tiny_bert_classifier --train "$work/train.jsonl" --output-dir "$work/run" \
  --device cpu --max_steps 2 --save_steps 2 --max_length 32 >/dev/null
"$berth" train --model $golden/tiny_bert_classifier --train "$work/train.jsonl" --output-dir "$work/run" \
  --device cuda:0 --max_steps 4 --save_steps 2 --max_length 32 --resume_from_checkpoint latest | tee "$work/resume.out"
grep -q "optimizer state: moved" "$work/resume.out" || { echo "gpu: optimizer state did not follow to cuda:0"; exit 1; }
build-gpu/bin/model_init --model $golden/tiny_bert_classifier | tee "$work/model_init.out"
grep -q "the model is now on cuda:0" "$work/model_init.out" || { echo "gpu: model_init's model not placed"; exit 1; }
"$berth" train --model $golden/tiny_bert_classifier --train "$work/train.jsonl" --output-dir "$work/strict" \
  --device cuda:0 --max_steps 1 --save_strategy no --max_length 32 --placement strict >/dev/null
echo "gpu: trainer resume cpu -> cuda:0 and model_init placement ok"
# DDP on GPUs: 2 ranks (one GPU each over NCCL; on a one-GPU machine both share cuda:0, which NCCL refuses, so
# Gloo carries the CUDA gradients there) train as 1 rank with twice the batch.
ddp_env=() ddp_backend=nccl
if [ "$count" -lt 2 ]; then ddp_env=(BERTH_ALLOW_SHARED_DEVICE=1) ddp_backend=gloo; fi
ddp_args=(--model $golden/tiny_bert_classifier --train "$work/train.jsonl" --max_steps 3 --save_strategy no
  --max_length 32 --gradient_accumulation_steps 2 --max_grad_norm 0.5 --seed 3)
env "${ddp_env[@]}" "$berth" launch --nproc-per-node 2 -- "$berth" train "${ddp_args[@]}" --device cuda \
  --ddp_backend $ddp_backend --output-dir "$work/ddp" --per_device_train_batch_size 4 | tee "$work/ddp.out"
grep -q "distributed: 2 ranks (torchrun, $ddp_backend)" "$work/ddp.out" || { echo "gpu: DDP did not use $ddp_backend"; exit 1; }
"$berth" train "${ddp_args[@]}" --device cuda:0 --output-dir "$work/one" --per_device_train_batch_size 8 >/dev/null
"$py" - "$work" <<'PY'
import json, struct, sys, torch
def load_file(path):  # safetensors without the safetensors package: f32 tensors only, as berth writes them
    data = open(path, "rb").read(); n = struct.unpack("<Q", data[:8])[0]; header = json.loads(data[8:8 + n])
    return {k: torch.frombuffer(bytearray(data[8 + n + v["data_offsets"][0]:8 + n + v["data_offsets"][1]]),
                                dtype=torch.float32).reshape(v["shape"])
            for k, v in header.items() if k != "__metadata__"}
a = load_file(sys.argv[1] + "/ddp/model.safetensors"); b = load_file(sys.argv[1] + "/one/model.safetensors")
worst = max((a[k] - b[k]).abs().max().item() for k in a)
assert worst < 1e-4, worst
print(f"gpu: 2 ranks x 4 == 1 rank x 8 on CUDA (largest difference {worst:.2e})")
PY
# ZeRO and mixed precision on GPUs: the seed's DeepSpeed config as written (fp16, ZeRO-1, optimizer offloaded to
# pinned CPU memory) trains; stage 3 with fp16 equals DDP within fp16's tolerance; bf16 autocast trains.
"$berth" launch --nproc-per-node 2 -- env "${ddp_env[@]}" "$berth" train "${ddp_args[@]}" --device cuda \
  --ddp_backend $ddp_backend --output-dir "$work/seed" --per_device_train_batch_size 4 \
  --deepspeed tests/train/fixtures/seed_deepspeed_config.json | tee "$work/seed.out"
grep -q "sharding: zero-1 (overlap_comm, offload_optimizer cpu pinned)" "$work/seed.out" ||
  { echo "gpu: the seed config did not run ZeRO-1 with pinned offload"; exit 1; }
"$py" - "$work" <<'PY'
import json, sys
json.dump({"fp16": {"enabled": True}, "zero_optimization": {"stage": 3, "overlap_comm": True,
           "stage3_param_persistence_threshold": 1000}, "gradient_clipping": "auto"}, open(sys.argv[1] + "/z3.json", "w"))
PY
"$berth" launch --nproc-per-node 2 -- env "${ddp_env[@]}" "$berth" train "${ddp_args[@]}" --device cuda \
  --ddp_backend $ddp_backend --output-dir "$work/z3" --per_device_train_batch_size 4 --deepspeed "$work/z3.json" |
  tee "$work/z3.out"
grep -q "memory per rank (zero-3, fp16)" "$work/z3.out" || { echo "gpu: no ZeRO-3 fp16 memory report"; exit 1; }
"$berth" train "${ddp_args[@]}" --device cuda:0 --output-dir "$work/bf16" --per_device_train_batch_size 8 --bf16 true |
  tee "$work/bf16.out"
echo "gpu: ZeRO-1 offload fp16 (seed config), ZeRO-3 fp16 and bf16 trained"
# One GPU: fp32 and fp16 (DeepSpeed's dynamic loss scaling) on cuda:0, and ZeRO-1 with the optimizer offloaded
# to pinned CPU memory at world size 1 over NCCL (the seed's config as written).
"$berth" train "${ddp_args[@]}" --device cuda:0 --output-dir "$work/fp32" --per_device_train_batch_size 8 >/dev/null
"$berth" train "${ddp_args[@]}" --device cuda:0 --output-dir "$work/fp16" --per_device_train_batch_size 8 \
  --fp16 true >/dev/null
"$berth" launch --nproc-per-node 1 -- "$berth" train "${ddp_args[@]}" --device cuda --ddp_backend nccl \
  --output-dir "$work/z1" --per_device_train_batch_size 8 --deepspeed tests/train/fixtures/seed_deepspeed_config.json |
  tee "$work/z1.out"
grep -q "sharding: zero-1 (overlap_comm, offload_optimizer cpu pinned)" "$work/z1.out" ||
  { echo "gpu: ZeRO-1 with pinned offload did not run at world size 1"; exit 1; }
echo "gpu: fp32, fp16 and ZeRO-1 (pinned offload, NCCL, 1 rank) trained on cuda:0"
# bf16 bert-base training steps on cuda:0, berth against transformers (SDPA, fused AdamW, autocast), and the
# model FLOP utilisation of each against this GPU's measured bf16 matmul peak (8192^3 torch.mm).
peak=$("$py" -c '
import time, torch
a = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16); b = torch.randn_like(a)
for _ in range(3): a @ b
torch.cuda.synchronize(); t = time.perf_counter()
for _ in range(20): a @ b
torch.cuda.synchronize(); print(20 * 2 * 8192**3 / (time.perf_counter() - t) / 1e9)')
bench_args=(--model-preset bert-base --batch-size 32 --seq-len 128 --steps 20 --warmup 5)
berth_line=$("$berth" benchmark "${bench_args[@]}" --device cuda:0 --bf16)
hf_line=$("$py" bench/train_step.py "${bench_args[@]}" --device cuda --bf16)
for line in "$berth_line" "$hf_line"; do
  "$py" -c 'import json, sys; d = json.loads(sys.argv[1]); p = float(sys.argv[2])
print("gpu: bf16 bert-base 32x128 %-6s %7.1f samples/s, %6.1f TFLOP/s, MFU %.1f%% of the measured %.0f TFLOP/s"
      % (d["implementation"], d["samples_per_second"], d["achieved_gflops"] / 1e3,
         100 * d["achieved_gflops"] / p, p / 1e3))' "$line" "$peak"
done
# Tests that need the npm packages (HF tokenizers goldens, SpamAssassin) run only where scripts/setup ran.
exclude='style\.'
[ -d "${BERTH_CACHE_DIR:-.cache}/npm/node_modules/@anush008/tokenizers" ] || exclude='style\.|Golden|SpamAssassin|TokenizerBench'
ctest --test-dir build-gpu -j 4 --output-on-failure -E "$exclude"
echo "gpu: ok"
