#!/usr/bin/env bash
# `trtlab tune` on a GPU machine, then the bare ONNX Runtime peer (benchmarks/tune_peer.py) on the same settings in
# the same run. Needs onnxruntime-gpu importable by python3 (PYTHONPATH as GPU.md says).
# Usage: bash benchmarks/gpu_tune.sh OUT_DIR PRECISION "MODEL.onnx;BATCH[;SHAPES]" ...
set -u
out=$1; precision=$2; shift 2
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
results=()
for item in "$@"; do
  IFS=';' read -r model batch shapes <<< "$item"; stem=$(basename "$model" .onnx)
  json="$out/tune_${stem}_${precision}_b${batch}.json"
  python3 -m app tune "$model" --backend "ort-cuda:$precision" --batch "$batch" ${shapes:+--shapes "$shapes"} --sessions "${SESSIONS:-3}" \
      --warmup "${WARMUP:-20}" --iterations "${ITER:-100}" --json "$json" > "$out/tune_${stem}_b${batch}.txt" \
      2> "$out/tune_${stem}_b${batch}.log"
  echo "tune $stem batch $batch: exit $?"
  cat "$out/tune_${stem}_b${batch}.txt"
  [ -s "$json" ] && results+=("$json")
done
python3 benchmarks/tune_peer.py "${results[@]}" --warmup "${WARMUP:-20}" --iterations "${ITER:-100}" \
    --out "$out/tune_peer.json" 2> "$out/tune_peer.log"
echo "peer exit $?"
