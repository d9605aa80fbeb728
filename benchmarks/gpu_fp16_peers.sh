#!/usr/bin/env bash
# The FP16 peers table on a GPU machine: trtlab's FP16 against onnxconverter-common and ModelOpt AutoCast, timed on
# ONNX Runtime's CUDA provider. Needs onnxruntime-gpu (and, for the peers, onnxconverter-common and nvidia-modelopt
# with PyTorch) importable by python3; PYTHONPATH as the machine has them.
# Usage: bash benchmarks/gpu_fp16_peers.sh OUT_DIR TAG MODEL.onnx... (a corpus model: TRTLAB_CORPUS names its folder)
set -u
out=$1; tag=$2; shift 2
mkdir -p "$out"
nvidia-smi --query-gpu=name,driver_version --format=csv,noheader > "$out/gpu.txt" 2>&1
python3 benchmarks/fp16_peers.py "$@" --no-extra --peer-python python3 --backend ort-cuda --time "${TIME:-100}" \
    --sessions "${SESSIONS:-3}" --work "/tmp/peers-work-$tag" --json "$out/peers_$tag.json" \
    > "$out/peers_$tag.txt" 2> "$out/peers_$tag.log"
echo "exit $?"
grep -v "^  \[" "$out/peers_$tag.txt" | tail -40
