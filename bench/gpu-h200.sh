#!/usr/bin/env bash
# One short Vulkan benchmark run on an NVIDIA GPU (written for the H200 the device tool
# lends some sessions for 15 minutes; any NVIDIA/AMD/Intel GPU with a Vulkan driver works).
#
#   bench/gpu-h200.sh [OUT_DIR]          (from the repository root; OUT_DIR default $OUT or /tmp/loom-gpu)
#
# Steps (each bounded by a timeout so the whole run stays under ~9 minutes):
#   1. facts: nvidia-smi, Vulkan ICDs/loader, compilers;
#   2. build: Release with LOOM_VULKAN=ON into build-gpu/ (skipped when build-gpu/bin/loom
#      exists, e.g. a build carried from another machine); without a system Vulkan loader,
#      LOOM_VK_LOADER may name a carried libvulkan.so.1 (build-gpu/lib/libvulkan.so.1 is
#      used automatically); without an NVIDIA ICD JSON one is written for libGLX_nvidia.so.0;
#   3. loom info --devices;
#   4. loom bench vk (kernel bench: copy bandwidth, decode GB/s and prompt TFLOP/s per
#      type, float path and int8-dot path);
#   5. two synthetic models written by loom gen: a 1.1B-shaped Q4_0 (TinyLlama shapes) and
#      an 8B-shaped Q4_K_M (Llama-3-8B shapes with a 32000-token vocabulary), each benched
#      with every layer on the GPU (-ngl 99), pp512 and tg128, 3 repetitions, without and
#      with flash attention; the tg bound uses the H200's nominal 4800 GB/s (--gpu-bw).
# Everything goes to stdout and to OUT_DIR/gpu-bench.txt (kernel bench JSON in
# OUT_DIR/bench-vk.json). SMALL=1 shrinks everything (a dry run of the script on a
# software device: LOOM_VK_DEVICES=all SMALL=1 bench/gpu-h200.sh).
# Goals from issue #21: tg >= 50% of the bandwidth bound on the 8B model, pp > 2000 tok/s.
set -u
OUT=${1:-${OUT:-/tmp/loom-gpu}}
mkdir -p "$OUT"
LOG="$OUT/gpu-bench.txt"
: >"$LOG"
exec > >(tee -a "$LOG") 2>&1
cd "$(dirname "$0")/.."
BIN=build-gpu/bin/loom
JOBS=$(nproc 2>/dev/null || echo 8)
GPU_BW=${GPU_BW:-4800}
step() { echo; echo "== $* ($(date +%T))"; }

step "facts"
nvidia-smi --query-gpu=name,memory.total,memory.used,clocks.max.memory,driver_version --format=csv 2>/dev/null ||
  echo "nvidia-smi: not available"
ls /usr/share/vulkan/icd.d /etc/vulkan/icd.d 2>/dev/null
ldconfig -p 2>/dev/null | grep -E "libvulkan|libGLX_nvidia" || echo "no libvulkan / libGLX_nvidia in ldconfig"
echo "cmake: $(command -v cmake || echo none)  glslc: $(command -v glslc || echo none)  cc: $(command -v cc || echo none)"

step "build"
if [ ! -x "$BIN" ]; then
  if ! command -v glslc >/dev/null || ! command -v cmake >/dev/null; then
    echo "cannot build the Vulkan backend here (cmake/glslc missing) and no build-gpu/bin/loom: stop"
    exit 1
  fi
  timeout 300 cmake -S . -B build-gpu -DCMAKE_BUILD_TYPE=Release -DLOOM_VULKAN=ON >/dev/null &&
    timeout 300 cmake --build build-gpu -j "$JOBS" >/dev/null || { echo "build failed"; exit 1; }
fi
"$BIN" info --cpu | head -1
if [ -z "${LOOM_VK_LOADER:-}" ] && ! ldconfig -p 2>/dev/null | grep -q "libvulkan.so.1" && [ -e build-gpu/lib/libvulkan.so.1 ]; then
  export LOOM_VK_LOADER="$PWD/build-gpu/lib/libvulkan.so.1"
  echo "using the carried loader $LOOM_VK_LOADER"
fi
if ! ls /usr/share/vulkan/icd.d/nvidia* /etc/vulkan/icd.d/nvidia* >/dev/null 2>&1 &&
   ldconfig -p 2>/dev/null | grep -q libGLX_nvidia.so.0 && [ -z "${VK_ICD_FILENAMES:-}" ]; then
  printf '{"file_format_version":"1.0.0","ICD":{"library_path":"libGLX_nvidia.so.0","api_version":"1.3"}}\n' \
    >"$OUT/nvidia_icd.json"
  export VK_ICD_FILENAMES="$OUT/nvidia_icd.json"
  echo "no NVIDIA ICD JSON installed: using $VK_ICD_FILENAMES"
fi

step "devices"
timeout 60 "$BIN" info --devices || { echo "device listing failed"; exit 1; }

Q=""; PP=512; TG=128
if [ "${SMALL:-0}" = 1 ]; then Q=--quick; PP=32; TG=8; fi
step "kernel bench (float path)"
timeout 150 "$BIN" bench vk $Q | tee /dev/null
timeout 60 "$BIN" bench vk $Q --json --types Q4_0,Q4_K >"$OUT/bench-vk.json" 2>/dev/null
step "kernel bench (int8-dot path)"
timeout 150 "$BIN" bench vk $Q --int8 --types Q8_0,Q4_0,Q4_K,Q6_K

step "models"
VOCAB=tests/data/vocab/ggml-vocab-llama-spm.gguf
M1="$OUT/tinyllama-syn-q4_0.gguf"
M8="$OUT/llama8b-syn-q4_k_m.gguf"
if [ "${SMALL:-0}" = 1 ]; then
  S1="--dim 256 --layers 2 --heads 4 --kv-heads 2 --ffn 512"; S8="--dim 512 --layers 2 --heads 8 --kv-heads 2 --ffn 1024"
else
  S1="--dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632"; S8="--dim 4096 --layers 32 --heads 32 --kv-heads 8 --ffn 14336"
fi
[ -s "$M1" ] || timeout 120 "$BIN" gen --vocab "$VOCAB" $S1 --type Q4_0 -t "$JOBS" -o "$M1"
[ -s "$M8" ] || timeout 240 "$BIN" gen --vocab "$VOCAB" $S8 --type Q4_K_M -t "$JOBS" -o "$M8"
ls -la "$M1" "$M8"

for m in "$M1" "$M8"; do
  for fa in "-fa off" "-fa on"; do
    step "loom bench $(basename "$m") -ngl 99 $fa"
    timeout 180 "$BIN" bench "$m" -ngl 99 $fa -p "$PP" -n "$TG" -r 3 -t "$JOBS" --gpu-bw "$GPU_BW" --bw-mib 0
  done
done

step "CPU baseline (1.1B, same machine)"
timeout 120 "$BIN" bench "$M1" -p "$((PP / 4))" -n "$((TG / 4))" -r 2 -t "$JOBS" --bw-mib 256

step "done: $LOG"
