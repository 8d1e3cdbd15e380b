#!/bin/sh
# Thread scaling, Loom vs llama.cpp side by side at several thread counts (issue 22, item 6),
# in one bounded run on a many-core machine where nothing can be fetched (the 16-core device
# machine some sessions are lent: see /work/.library/device/README.md in the workplace).
#
#   bench/cpu-scaling.sh prepare [DIR]        here: stage everything the run needs in DIR
#   bench/cpu-scaling.sh run [DIR] [OUTDIR]   there: build llama-bench, generate models, run
#
# prepare (default DIR .devbench, which must be ignored by git: the script adds it to
#   .git/info/exclude): builds loom (Release, no server, no Vulkan) in /tmp, copies bin/loom and
#   the non-glibc shared libraries it needs to DIR/bin, the llama vocabulary to DIR/, and packs
#   the llama.cpp source that bench/vs-llamacpp.sh builds (its cache: $LOOM_LLAMA_CACHE or
#   $HOME/.cache/loom-llama, src/ cloned from the node-llama-cpp@3.21.1 bundle; run
#   vs-llamacpp.sh once to make it) into DIR/llama-src.tar.gz (CPU backend only, ~5 MB).
#   DIR is then ~9 MB: name it in the device tool's `carry`.
# run (default OUTDIR $OUT, else DIR/out): builds llama-bench there (CMake Release, native:
#   llama.cpp's best code for that CPU; if it then dies on the AMX kernels, a rebuild without
#   AMX, as bench/README.md reports for some VMs) while it writes the 1.1B-shaped models with
#   `loom gen`, then runs bench/vs-llamacpp.sh at each thread count. Env:
#     THREADS_LIST  thread counts (default "4 8 16")
#     TYPES         model types for loom gen (default "Q4_0 Q4_K_M")
#     ROUNDS P N    vs-llamacpp.sh -r / -p / -n (default 3, 512, 128)
#     BUDGET_S      no new thread count is started past this many seconds (default 420)
#     GEN_SHAPE     loom gen shape options (default the 1.1B shape of bench/README.md)
#     LLAMA_BUILD   an existing llama.cpp build folder with bin/llama-bench: no build (dry runs)
#   OUTDIR gets machine.txt (lscpu, memory, the ISA level Loom picks), build.log, gen.log,
#   scaling-tT.md per thread count (vs-llamacpp.sh's tables) and summary.md (one table).
#   The device tool returns at most 8 files: that is 6 with THREADS_LIST of 3 entries.
#
# Example (device tool): carry [".devbench"], command
#   sh bench/cpu-scaling.sh run .devbench "$OUT"    with timeout_s 600
set -eu

die() {
  printf 'cpu-scaling: error: %s\n' "$*" >&2
  exit 1
}

MODE=${1:-}
[ -n "$MODE" ] || die "usage: $0 prepare [DIR] | run [DIR] [OUTDIR]"
DIR=${2:-.devbench}
ROOT=$(cd "$(dirname "$0")/.." && pwd)

prepare() {
  cd "$ROOT"
  mkdir -p "$DIR/bin"
  if [ -d .git ] && ! grep -qx "/$DIR/" .git/info/exclude 2>/dev/null; then
    printf '/%s/\n' "$DIR" >>.git/info/exclude
  fi
  cache=${LOOM_LLAMA_CACHE:-${HOME:-/tmp}/.cache/loom-llama}
  [ -d "$cache/src/.git" ] || die "no llama.cpp clone in $cache/src: run bench/vs-llamacpp.sh once (or set LOOM_LLAMA_CACHE)"
  b=${TMPDIR:-/tmp}/loom-cpu-scaling-build
  cmake -S . -B "$b" -DCMAKE_BUILD_TYPE=Release -DLOOM_SERVER=OFF -DLOOM_VULKAN=OFF \
    -DLOOM_FAULT_INJECTION=OFF >"$b.log" 2>&1 || die "cmake configure failed, see $b.log"
  cmake --build "$b" -j "$(nproc 2>/dev/null || echo 2)" --target loom_cli >>"$b.log" 2>&1 ||
    die "loom build failed, see $b.log"
  cp "$b/bin/loom" "$DIR/bin/loom"
  # shared libraries outside glibc travel with it (run sets LD_LIBRARY_PATH)
  ldd "$b/bin/loom" | awk '$3 ~ /^\// {print $3}' | while read -r lib; do
    case $(basename "$lib") in
      libc.so* | libm.so* | libpthread.so* | libdl.so* | librt.so* | ld-linux*) ;;
      *) cp -L "$lib" "$DIR/bin/" ;;
    esac
  done
  cp tests/data/vocab/ggml-vocab-llama-spm.gguf "$DIR/vocab.gguf"
  # the CPU backend's source only: the other backends' folders are not configured without
  # their GGML_* options, and the server's web UI is not built without LLAMA_BUILD_SERVER
  ex=
  for d in tools/ui tools/server ggml/src/ggml-cuda ggml/src/ggml-vulkan ggml/src/ggml-metal \
    ggml/src/ggml-sycl ggml/src/ggml-opencl ggml/src/ggml-hexagon ggml/src/ggml-et \
    ggml/src/ggml-cann ggml/src/ggml-musa ggml/src/ggml-webgpu ggml/src/ggml-zdnn ggml/src/ggml-hip; do
    ex="$ex :(exclude)$d"
  done
  # shellcheck disable=SC2086 # ex: word splitting intended
  git -C "$cache/src" archive --format=tar HEAD ggml src include common tools cmake vendor app \
    CMakeLists.txt LICENSE licenses $ex | gzip -9 >"$DIR/llama-src.tar.gz" ||
    die "git archive of $cache/src failed"
  git -C "$cache/src" rev-parse HEAD >"$DIR/llama-commit.txt"
  du -sh "$DIR"
  # shellcheck disable=SC2016 # "$OUT" is printed for the device command line
  printf 'cpu-scaling: staged in %s; on the device: sh bench/cpu-scaling.sh run %s "$OUT" (carry %s)\n' \
    "$DIR" "$DIR" "$DIR"
}

# build_llama SRC BUILD EXTRA_FLAGS: llama-bench, native, static
build_llama() {
  gen=
  command -v ninja >/dev/null 2>&1 && gen="-G Ninja"
  # shellcheck disable=SC2086 # gen: word splitting intended
  cmake -S "$1" -B "$2" $gen -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF \
    -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF \
    -DCMAKE_C_FLAGS="$3" -DCMAKE_CXX_FLAGS="$3" &&
    cmake --build "$2" -j "$(nproc)" --target llama-bench
}

run_all() {
  cd "$ROOT"
  OUTDIR=${3:-${OUT:-$DIR/out}}
  mkdir -p "$OUTDIR"
  start=$(date +%s)
  THREADS_LIST=${THREADS_LIST:-4 8 16}
  TYPES=${TYPES:-Q4_0 Q4_K_M}
  ROUNDS=${ROUNDS:-3}
  P=${P:-512}
  N=${N:-128}
  BUDGET_S=${BUDGET_S:-420}
  LOOM=$ROOT/$DIR/bin/loom
  [ -x "$LOOM" ] || die "$LOOM missing: run '$0 prepare' here first and carry $DIR"
  export LD_LIBRARY_PATH="$ROOT/$DIR/bin${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
  W=${TMPDIR:-/tmp}/loom-cpu-scaling
  rm -rf "$W" && mkdir -p "$W/llama"
  tar xzf "$DIR/llama-src.tar.gz" -C "$W/llama" || die "cannot unpack $DIR/llama-src.tar.gz"
  {
    date -u
    uname -a
    lscpu 2>/dev/null || cat /proc/cpuinfo
    grep -E 'MemTotal|MemAvailable' /proc/meminfo
    "$LOOM" info --cpu 2>&1 || true
    printf 'llama.cpp: %s\n' "$(cat "$DIR/llama-commit.txt" 2>/dev/null)"
  } >"$OUTDIR/machine.txt" 2>&1
  LBUILD=${LLAMA_BUILD:-$W/llama/build}
  if [ -x "$LBUILD/bin/llama-bench" ]; then
    echo 0 >"$W/build.rc" && echo "cpu-scaling: using $LBUILD" >"$OUTDIR/build.log"
    bpid=
  else
    (build_llama "$W/llama" "$LBUILD" "" >"$OUTDIR/build.log" 2>&1; echo $? >"$W/build.rc") &
    bpid=$!
  fi
  shape=${GEN_SHAPE:---dim 2048 --layers 22 --heads 32 --kv-heads 4 --ffn 5632}
  files=
  for t in $TYPES; do
    f=$W/tl-$t.gguf
    # shellcheck disable=SC2086 # shape: word splitting intended
    "$LOOM" gen --vocab "$DIR/vocab.gguf" $shape --ctx 4096 --type "$t" -t "$(nproc)" -o "$f" \
      >>"$OUTDIR/gen.log" 2>&1 ||
      die "loom gen --type $t failed, see gen.log"
    files="$files $f"
  done
  [ -z "$bpid" ] || wait "$bpid" || true
  [ "$(cat "$W/build.rc")" = 0 ] || die "llama-bench build failed, see build.log"
  LB=$LBUILD/bin/llama-bench
  first=${files# }
  first=${first%% *}
  rc=0
  "$LB" -m "$first" -p 8 -n 2 -r 1 -t 2 >"$W/smoke.log" 2>&1 || rc=$?
  if [ "$rc" -ne 0 ] && grep -q amx /proc/cpuinfo; then
    printf 'cpu-scaling: llama-bench failed (exit %s) on this AMX CPU; rebuilding without AMX\n' "$rc" |
      tee -a "$OUTDIR/build.log"
    build_llama "$W/llama" "$W/llama/build-noamx" "-mno-amx-tile -mno-amx-int8 -mno-amx-bf16" \
      >>"$OUTDIR/build.log" 2>&1 || die "llama-bench build without AMX failed, see build.log"
    LB=$W/llama/build-noamx/bin/llama-bench
    rc=0
    "$LB" -m "$first" -p 8 -n 2 -r 1 -t 2 >"$W/smoke.log" 2>&1 || rc=$?
  fi
  [ "$rc" -eq 0 ] || { tail -n 20 "$W/smoke.log" >&2; die "llama-bench smoke run failed (exit $rc)"; }
  printf 'cpu-scaling: ready after %s s (llama-bench %s)\n' "$(($(date +%s) - start))" "$LB" |
    tee -a "$OUTDIR/build.log"
  for t in $THREADS_LIST; do
    el=$(($(date +%s) - start))
    if [ "$el" -gt "$BUDGET_S" ]; then
      printf 'cpu-scaling: %s s elapsed, over BUDGET_S=%s: -t %s not run\n' "$el" "$BUDGET_S" "$t" |
        tee -a "$OUTDIR/build.log"
      continue
    fi
    # shellcheck disable=SC2086 # files: word splitting intended
    LOOM=$LOOM LLAMA_BENCH=$LB sh bench/vs-llamacpp.sh -t "$t" -r "$ROUNDS" -p "$P" -n "$N" $files \
      >"$OUTDIR/scaling-t$t.md" 2>>"$OUTDIR/build.log" || printf 'cpu-scaling: -t %s failed\n' "$t" >&2
  done
  {
    printf '| threads | file | llama.cpp pp%s | Loom pp%s | ratio | llama.cpp tg%s | Loom tg%s | ratio |\n' "$P" "$P" "$N" "$N"
    printf '|---|---|---:|---:|---:|---:|---:|---:|\n'
    for t in $THREADS_LIST; do
      [ -f "$OUTDIR/scaling-t$t.md" ] || continue
      # vs-llamacpp.sh's per-file tables ("## FILE (...)", then rows "| ppP | llama | loom |
      # ratio | rounds | rounds |" and "| tgN | ..."): its own summary table is printed only
      # for two or more files
      awk -v t="$t" -F'|' '
        /^## / { split($0, a, " "); f = a[2]; pl = po = pr = " - " }
        /^\| pp[0-9]+ \|/ { pl = $3; po = $4; pr = $5 }
        /^\| tg[0-9]+ \|/ { printf "| %s | %s |%s|%s|%s|%s|%s|%s|\n", t, f, pl, po, pr, $3, $4, $5 }' \
        "$OUTDIR/scaling-t$t.md"
    done
  } >"$OUTDIR/summary.md"
  cat "$OUTDIR/summary.md"
  printf 'cpu-scaling: done in %s s\n' "$(($(date +%s) - start))"
}

case $MODE in
  prepare) prepare ;;
  run) run_all "$@" ;;
  *) die "unknown mode '$MODE': prepare or run" ;;
esac
