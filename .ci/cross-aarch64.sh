#!/usr/bin/env bash
# Cross-build Loom for aarch64 (Release) and run the kernel, quant, op and model tests
# plus a short generation under qemu-user. Works on a fresh Debian 12 machine (as root,
# or with sudo). Usage: .ci/cross-aarch64.sh   (BUILD=build-aarch64 JOBS=<n> to override)
set -euo pipefail
cd "$(dirname "$0")/.."
t_start=$(date +%s)

BUILD=${BUILD:-build-aarch64}
JOBS=${JOBS:-$(nproc 2>/dev/null || echo 2)}
SYSROOT=/usr/aarch64-linux-gnu

export DEBIAN_FRONTEND=noninteractive
SUDO=""
if [ "$(id -u)" != 0 ]; then SUDO="sudo"; fi
echo "== install the cross toolchain and qemu-user"
$SUDO apt-get update -q >/dev/null
$SUDO apt-get install -y -q --no-install-recommends cmake make gcc-aarch64-linux-gnu g++-aarch64-linux-gnu \
  libc6-dev-arm64-cross qemu-user >/dev/null

echo "== cross build ($BUILD, Release)"
cmake -S . -B "$BUILD" -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake -DCMAKE_BUILD_TYPE=Release \
  -DLOOM_WERROR=ON >/dev/null
cmake --build "$BUILD" -j "$JOBS"
t_built=$(date +%s)

QEMU="qemu-aarch64 -L $SYSROOT"
# Without binfmt_misc a test that re-executes itself needs qemu in front of the child.
export LOOM_TEST_EXEC_WRAPPER="$QEMU"

fails=0
# Test binaries run JOBS at a time (qemu-user is single-core per guest thread and the
# five test_cpu_kernels runs dominate); `report` waits for them and prints in launch order.
labels=()
run() { # run <label> <env...> -- <prog> [args]: a test binary under qemu, cwd = source dir
  local label=$1; shift
  local envs=()
  while [ "$1" != "--" ]; do envs+=("$1"); shift; done
  shift
  local log="$BUILD/qemu-$label.log"
  while [ "$(jobs -rp | wc -l)" -ge "$JOBS" ]; do wait -n || true; done
  rm -f "$log.status"
  ( t0=$(date +%s)
    if env ${envs[@]+"${envs[@]}"} $QEMU "$@" >"$log" 2>&1; then st=ok; else st=FAIL; fi
    echo "$st $(($(date +%s) - t0))" >"$log.status" ) &
  labels+=("$label")
}
report() { # wait for every launched run, print each in launch order, count the failures
  wait
  local label log st secs
  for label in "${labels[@]}"; do
    log="$BUILD/qemu-$label.log"
    read -r st secs <"$log.status" || { st=FAIL; secs=?; }
    printf '  %-44s %-4s %5s s  %s\n' "$label" "$st" "$secs" "$(grep -E 'passed, [0-9]+ failed' "$log" | tail -n 1)"
    if [ "$st" != ok ]; then
      tail -n 20 "$log" | sed 's/^/      /'
      fails=$((fails + 1))
    fi
  done
  labels=()
}

echo "== qemu: CPU kernels (every level on the default CPU, forced levels, a CPU without dotprod), quant, op,"
echo "   model, llama.cpp-file (every NEON level) and corpus-replay tests, $JOBS at a time"
$QEMU -cpu max "$BUILD/bin/test_cpu_kernels" --print-isa | sed 's/^/  -cpu max picks: /'
run test_cpu_kernels -- "$BUILD/bin/test_cpu_kernels"
for isa in scalar neon neon_dotprod; do
  run "test_cpu_kernels[LOOM_CPU_ISA=$isa]" LOOM_CPU_ISA=$isa -- "$BUILD/bin/test_cpu_kernels"
done
# cortex-a53: ASIMD without dotprod/fp16 -> baseline "neon" only (SIGILL if it leaks SDOT)
run "test_cpu_kernels[-cpu cortex-a53]" "LOOM_TEST_EXEC_WRAPPER=$QEMU -cpu cortex-a53" -- -cpu cortex-a53 \
  "$BUILD/bin/test_cpu_kernels"

for t in test_quant_formats test_core_graph test_cpu_block test_cpu_pool test_cpu_ops_basic test_cpu_ops_nn \
         test_cpu_ops_nn_attn test_cpu_fa_tile test_cpu_ops_nn_conv test_gguf_read test_backend_sched test_llm_kvcache \
         test_llm_sampler test_llm_tokenizer test_llm_model test_llm_model_quant test_cpu_fastmath test_cpu_attn_mask_hint \
         test_gguf_llamacpp test_llm_llamacpp test_cpu_ops_sinks test_llm_arch; do
  if [ -x "$BUILD/bin/$t" ]; then run "$t" -- "$BUILD/bin/$t"; else echo "  $t: not built (skipped)"; fi
done
for f in "$BUILD"/bin/corpus_*; do # every fuzz corpus and crash reproducer, replayed
  name=$(basename "$f"); name=${name#corpus_}
  run "corpus_$name" -- "$f" "fuzz/corpus/$name" --optional "tests/data/regress/$name"
done
run "test_llm_model[LOOM_CPU_ISA=scalar]" LOOM_CPU_ISA=scalar -- "$BUILD/bin/test_llm_model"
run "test_llm_model[-cpu cortex-a53]" -- -cpu cortex-a53 "$BUILD/bin/test_llm_model"
report

echo "== qemu: loom run --temp 0 -n 32 (bundled model), default level vs scalar"
gen() { env "$@" $QEMU "$BUILD/bin/loom" run --temp 0 -n 32 2>/dev/null; }
if out_simd=$(gen LOOM_CPU_ISA=) && out_ref=$(gen LOOM_CPU_ISA=scalar); then
  printf '%s\n' "$out_simd" | sed 's/^/  | /'
  if [ -z "$out_simd" ]; then
    echo "  FAIL: empty generation"; fails=$((fails + 1))
  elif [ "$out_simd" = "$out_ref" ]; then
    echo "  same text with LOOM_CPU_ISA=scalar"
  else
    echo "  note: greedy text differs from LOOM_CPU_ISA=scalar (float rounding order):"
    printf '%s\n' "$out_ref" | sed 's/^/  s| /'
  fi
else
  echo "  FAIL: loom run exited non-zero"; fails=$((fails + 1))
fi

t_end=$(date +%s)
echo "== cross-aarch64: build $((t_built - t_start)) s (incl. install), tests $((t_end - t_built)) s, total $((t_end - t_start)) s"
if [ "$fails" -ne 0 ]; then
  echo "cross-aarch64: $fails run(s) FAILED"
  exit 1
fi
echo "cross-aarch64: all runs passed"
