#!/usr/bin/env bash
# FP16 fallback search on ONNX Runtime CUDA, then the found plan compared and timed against FP32 and plain FP16.
# Usage (on a machine with onnxruntime-gpu): bash benchmarks/gpu_fallback.sh MODELS_DIR OUT_DIR [TARGET]
set -u
models=$1; out=$2; target=${3:-cos:0.999}
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
python3 -c "import onnxruntime as o; print(o.__version__, o.get_available_providers())" >> "$out/gpu.txt"
declare -A shapes=([magika_standard_v3_3]="bytes:1x2048" [u2netp]="input.1:1x3x320x320")
for name in ${NAMES:-magika_standard_v3_3 u2netp}; do
  m="$models/$name.onnx"; s=${shapes[$name]}
  python3 -m app fallback "$m" --candidate ort-cuda:fp16 --target "$target" --shapes "$s" --samples 4 \
      --budget 200s -o "$out/$name.plan.json" --json "$out/fb_$name.json" > "$out/fb_$name.txt" 2> "$out/fb_$name.log"
  [ -f "$out/$name.plan.json" ] || continue
  python3 -m app compare "$m" --candidate ort-cuda:fp32 --candidate ort-cuda:fp16 --candidate ort-cuda:plan \
      --plan "$out/$name.plan.json" --shapes "$s" --samples 8 --seed 1 --tol "$target" \
      --json "$out/cmp_$name.json" > "$out/cmp_$name.txt" 2>&1
  for p in fp32 fp16; do
    python3 -m app bench "$m" --backend "ort-cuda:$p" --shapes "$s" --warmup 50 --iterations 300 \
        --json "$out/bench_${name}_$p.json" > /dev/null 2>&1
  done
  python3 -m app bench "$m" --backend ort-cuda --plan "$out/$name.plan.json" --shapes "$s" --warmup 50 \
      --iterations 300 --json "$out/bench_${name}_plan.json" > /dev/null 2>&1
done
ls -la "$out"
