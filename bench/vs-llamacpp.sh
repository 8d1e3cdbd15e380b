#!/bin/sh
# Side-by-side speed of `loom bench` and llama.cpp's `llama-bench` on the same GGUF files,
# threads and sizes, interleaved (loom, llama, loom, llama, ...), ROUNDS rounds per file.
# Prints one markdown table per file: medians of pp and tg, ratios Loom/llama.cpp, and
# every round's value.
#
#   bench/vs-llamacpp.sh [-t THREADS] [-r ROUNDS] [-p P] [-n N] [-d DEPTH] [-D] [-f] [-c TYPE] MODEL.gguf...
#
#   -t THREADS  threads for both (default $THREADS or 2)
#   -r ROUNDS   interleaved rounds per file (default $ROUNDS or 3); each run is one repetition
#   -p P        prompt tokens of the pp test (default 512; 0 skips it)
#   -n N        generated tokens of the tg test (default 128; 0 skips it)
#   -d DEPTH    also run the tests with DEPTH tokens already in the cache (loom bench -d,
#               llama-bench -d; filling the cache is not timed)
#   -D          with -d: only the depth rows (skip the runs at depth 0)
#   -f          flash attention on for both (default off for both, passed explicitly:
#               loom bench -fa off, llama-bench -fa off; both tools' own default is on / auto)
#   -c TYPE     KV cache type for both: f16 (default), f32, q8_0, q4_0 (loom --cache-type TYPE,
#               llama-bench -ctk TYPE -ctv TYPE; q8_0 / q4_0 need -f)
#
# Env:
#   LOOM               loom binary (default build/bin/loom)
#   LLAMA_BENCH        llama-bench binary; when unset, it is built once (see below)
#   LOOM_LLAMA_CACHE   cache directory for that build (default $HOME/.cache/loom-llama)
#   LLAMA_EXTRA        more llama-bench options, word-split (e.g. "-ub 256"; see bench/README.md)
#   LOOM_EXTRA         more loom bench options
#   LLAMA_NO_AMX=1     build llama.cpp native but without AMX (-mno-amx-*; GCC lets those win
#                      over -march=native), default cache $HOME/.cache/loom-llama-noamx: for
#                      hosts that advertise AMX but fault on it (SIGILL in ggml_backend_amx_mul_mat)
#   LLAMA_CLANG_AMX=1  build llama.cpp with clang and -D__AMX_INT8__, default cache
#                      $HOME/.cache/loom-llama-clang-amx: llama.cpp's AMX path where GCC's
#                      build cannot run it. GCC 12 (Debian 12) drops the stores that fill
#                      ggml's AMX tile configuration before LDTILECFG, so its AMX kernels
#                      fault (SIGSEGV in ggml_backend_amx_mul_mat); clang 14 compiles them
#                      right but defines __AMXINT8__, not the __AMX_INT8__ that ggml tests,
#                      hence the define (bench/README.md, eighteenth session)
#   LLAMA_CMAKE_EXTRA  more CMake options for the llama.cpp build (word-split; a build is only
#                      made when the cache has none: use a fresh LOOM_LLAMA_CACHE to change it)
#   SETTLE=0           do not settle the page cache (below)
#
# Settling the page cache: before its rounds, each file's cached pages are dropped
# (`dd iflag=nocache count=0`) and the file is read once, so both tools map it in the state
# a file has after it was read from disk (after a reboot, say) rather than the one left by
# whatever wrote it. The two differ in the folio size of the page cache: on Linux 6.x
# with ext4's large folios, pages written by cp, a download or `loom gen` stay in small
# folios, mapped with 4 KiB pages, while readahead fills 2 MiB folios that a mapping
# takes as huge pages; weights read through the mapping (F16, BF16: neither tool
# copies them) then stream with far fewer TLB misses (1.1B F16 tg64 in Loom, 2-vCPU VM:
# ~12.2 t/s as written, 13.5-13.8 settled, 14.9-15.2 with --no-mmap).
#
# The build: `npm pack node-llama-cpp@3.21.1` in the cache directory, its llama.cpp git
# bundle (package/llama/gitRelease.bundle) cloned to src/, CMake Release with
# -DGGML_NATIVE=ON -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF (tests, server, examples off),
# target llama-bench only. Skipped when $CACHE/src/build/bin/llama-bench exists.
set -eu

NODE_LLAMA_VERSION=3.21.1
THREADS=${THREADS:-2}
ROUNDS=${ROUNDS:-3}
P=512
N=128
DEPTH=0
DEPTH_ONLY=0
FA=0
CTYPE=f16
LOOM=${LOOM:-build/bin/loom}
NO_AMX=${LLAMA_NO_AMX:-0}
CLANG_AMX=${LLAMA_CLANG_AMX:-0}
if [ "$NO_AMX" = 1 ]; then
  CACHE=${LOOM_LLAMA_CACHE:-${HOME:-/tmp}/.cache/loom-llama-noamx}
elif [ "$CLANG_AMX" = 1 ]; then
  CACHE=${LOOM_LLAMA_CACHE:-${HOME:-/tmp}/.cache/loom-llama-clang-amx}
else
  CACHE=${LOOM_LLAMA_CACHE:-${HOME:-/tmp}/.cache/loom-llama}
fi
OLDPWD_VS=$(pwd)

die() {
  printf 'vs-llamacpp: error: %s\n' "$*" >&2
  exit 1
}

usage() {
  sed -n '7,18p' "$0" | sed 's/^# \{0,1\}//' >&2
  exit 2
}

while getopts t:r:p:n:d:Dfc:h opt; do
  case $opt in
    t) THREADS=$OPTARG ;;
    r) ROUNDS=$OPTARG ;;
    p) P=$OPTARG ;;
    n) N=$OPTARG ;;
    d) DEPTH=$OPTARG ;;
    D) DEPTH_ONLY=1 ;;
    f) FA=1 ;;
    c) CTYPE=$OPTARG ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -ge 1 ] || usage
for v in "$THREADS" "$ROUNDS" "$P" "$N" "$DEPTH"; do
  case $v in
    '' | *[!0-9]*) die "not a non-negative integer: '$v'" ;;
  esac
done
[ "$ROUNDS" -ge 1 ] || die "ROUNDS must be >= 1"
[ "$THREADS" -ge 1 ] || die "THREADS must be >= 1"
[ "$P" -gt 0 ] || [ "$N" -gt 0 ] || die "-p and -n are both 0: nothing to measure"
case $CTYPE in
  f16 | f32) ;;
  q8_0 | q4_0) [ "$FA" = 1 ] || die "-c $CTYPE needs flash attention (-f)" ;;
  *) die "-c must be f16, f32, q8_0 or q4_0, got '$CTYPE'" ;;
esac
[ "$DEPTH_ONLY" = 0 ] || [ "$DEPTH" -gt 0 ] || die "-D needs -d DEPTH > 0"
for f in "$@"; do
  [ -f "$f" ] || die "no such model file: $f"
done
[ -x "$LOOM" ] || die "loom binary not found: $LOOM (build it, or set LOOM=path)"
command -v python3 >/dev/null 2>&1 || die "python3 is needed to parse the JSON outputs"

build_llama() {
  bin=$CACHE/src/build/bin/llama-bench
  if [ -x "$bin" ]; then
    LLAMA_BENCH=$bin
    return 0
  fi
  command -v npm >/dev/null 2>&1 || die "npm not found (needed once to fetch llama.cpp; or set LLAMA_BENCH=path)"
  command -v git >/dev/null 2>&1 || die "git not found"
  command -v cmake >/dev/null 2>&1 || die "cmake not found"
  mkdir -p "$CACHE"
  printf 'vs-llamacpp: building llama-bench from node-llama-cpp@%s in %s (once)\n' \
    "$NODE_LLAMA_VERSION" "$CACHE" >&2
  # every step checks its status: set -e does not apply inside an `||` list
  cd "$CACHE" || die "cannot enter $CACHE"
  tgz=node-llama-cpp-$NODE_LLAMA_VERSION.tgz
  if [ ! -f "$tgz" ]; then
    npm pack "node-llama-cpp@$NODE_LLAMA_VERSION" >npm.log 2>&1 || die "npm pack node-llama-cpp@$NODE_LLAMA_VERSION failed, see $CACHE/npm.log"
  fi
  rm -rf package
  tar xzf "$tgz" || die "cannot unpack $CACHE/$tgz"
  [ -f package/llama/gitRelease.bundle ] || die "package/llama/gitRelease.bundle missing from $tgz"
  if [ ! -d src/.git ]; then
    git -c advice.detachedHead=false clone -q package/llama/gitRelease.bundle src || die "git clone of the llama.cpp bundle failed"
  fi
  jobs=$(nproc 2>/dev/null || echo 2)
  noamx=
  [ "$NO_AMX" != 1 ] || noamx="-mno-amx-tile -mno-amx-int8 -mno-amx-bf16"
  cc=
  cxx=
  if [ "$CLANG_AMX" = 1 ]; then
    command -v clang >/dev/null 2>&1 || die "LLAMA_CLANG_AMX=1 needs clang"
    command -v clang++ >/dev/null 2>&1 || die "LLAMA_CLANG_AMX=1 needs clang++"
    cc=clang
    cxx=clang++
    noamx="-D__AMX_INT8__"
  fi
  # shellcheck disable=SC2086 # LLAMA_CMAKE_EXTRA: word splitting intended
  env ${cc:+CC=$cc} ${cxx:+CXX=$cxx} cmake -S src -B src/build -DCMAKE_C_FLAGS="$noamx" -DCMAKE_CXX_FLAGS="$noamx" -DCMAKE_BUILD_TYPE=Release -DGGML_NATIVE=ON \
    -DBUILD_SHARED_LIBS=OFF -DLLAMA_CURL=OFF -DLLAMA_BUILD_TESTS=OFF \
    -DLLAMA_BUILD_SERVER=OFF -DLLAMA_BUILD_EXAMPLES=OFF ${LLAMA_CMAKE_EXTRA:-} >build.log 2>&1 ||
    die "cmake configure failed, see $CACHE/build.log"
  cmake --build src/build -j "$jobs" --target llama-bench >>build.log 2>&1 ||
    die "llama-bench build failed, see $CACHE/build.log"
  cd "$OLDPWD_VS" || die "cannot return to $OLDPWD_VS"
  [ -x "$bin" ] || die "build finished but $bin is missing"
  LLAMA_BENCH=$bin
}

if [ -n "${LLAMA_BENCH:-}" ]; then
  [ -x "$LLAMA_BENCH" ] || die "LLAMA_BENCH is not an executable: $LLAMA_BENCH"
else
  build_llama
fi

TMP=$(mktemp -d "${TMPDIR:-/tmp}/loom-vs-llama-XXXXXX")
trap 'rm -rf "$TMP"' EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

if [ "$FA" = 1 ]; then
  LOOM_FA="-fa on"
  LLAMA_FA=on
else
  LOOM_FA="-fa off"
  LLAMA_FA=off
fi

# run OUT ERR NAME CMD... : run a benchmark, stop with its stderr's tail when it fails
run() {
  out=$1
  err=$2
  name=$3
  shift 3
  rc=0
  "$@" >"$out" 2>"$err" || rc=$?
  if [ "$rc" -ne 0 ]; then
    {
      printf 'vs-llamacpp: error: %s failed (exit status %s):\n  %s\n' "$name" "$rc" "$*"
      tail -n 15 "$err" | sed 's/^/  | /'
      if [ "$rc" -eq 132 ]; then
        printf '  (SIGILL: an instruction the CPU or VM does not allow, e.g. llama.cpp AMX kernels; see bench/README.md)\n'
      elif [ "$rc" -eq 139 ]; then
        printf '  (SIGSEGV: with a GCC 12 build on an AMX host, ggml'"'"'s AMX tile configuration; try LLAMA_CLANG_AMX=1)\n'
      fi
    } >&2
    exit 1
  fi
}

printf '# loom bench vs llama-bench\n\n'
printf -- '- loom: %s\n- llama-bench: %s\n' "$LOOM" "$LLAMA_BENCH"
printf -- '- threads %s, rounds %s (interleaved, 1 repetition per run), -p %s, -n %s, depth %s, flash attention %s, KV cache %s\n' \
  "$THREADS" "$ROUNDS" "$P" "$N" "$DEPTH" "$LLAMA_FA" "$CTYPE"
[ -z "${LLAMA_EXTRA:-}" ] || printf -- '- LLAMA_EXTRA: %s\n' "$LLAMA_EXTRA"
[ -z "${LOOM_EXTRA:-}" ] || printf -- '- LOOM_EXTRA: %s\n' "$LOOM_EXTRA"
printf -- '- host: %s, %s CPUs\n' "$(uname -m)" "$(nproc 2>/dev/null || echo '?')"
if [ "${SETTLE:-1}" = 1 ]; then
  printf -- '- page cache settled: each file dropped from it and read once before its rounds\n'
else
  printf -- '- page cache as found (SETTLE=0)\n'
fi

i=0
for model in "$@"; do
  i=$((i + 1))
  if [ "${SETTLE:-1}" = 1 ]; then
    dd if="$model" iflag=nocache count=0 status=none 2>/dev/null ||
      printf 'vs-llamacpp: could not drop %s from the page cache (dd iflag=nocache)\n' "$model" >&2
    cat "$model" >/dev/null || die "cannot read $model"
  fi
  r=1
  while [ "$r" -le "$ROUNDS" ]; do
    printf 'vs-llamacpp: %s round %s/%s\n' "$model" "$r" "$ROUNDS" >&2
    if [ "$DEPTH_ONLY" = 0 ]; then
      # shellcheck disable=SC2086 # LOOM_FA, LOOM_EXTRA: word splitting intended
      run "$TMP/loom.$i.$r.json" "$TMP/err" "loom bench" \
        "$LOOM" bench "$model" -p "$P" -n "$N" -t "$THREADS" -r 1 --bw-mib 0 $LOOM_FA \
        --cache-type "$CTYPE" ${LOOM_EXTRA:-} --json
      # shellcheck disable=SC2086 # LLAMA_EXTRA: word splitting intended
      run "$TMP/llama.$i.$r.json" "$TMP/err" "llama-bench" \
        "$LLAMA_BENCH" -m "$model" -p "$P" -n "$N" -t "$THREADS" -r 1 -fa "$LLAMA_FA" \
        -ctk "$CTYPE" -ctv "$CTYPE" ${LLAMA_EXTRA:-} -o json
    fi
    if [ "$DEPTH" -gt 0 ]; then
      # shellcheck disable=SC2086
      run "$TMP/loomd.$i.$r.json" "$TMP/err" "loom bench -d $DEPTH" \
        "$LOOM" bench "$model" -p "$P" -n "$N" -d "$DEPTH" -t "$THREADS" -r 1 --bw-mib 0 $LOOM_FA \
        --cache-type "$CTYPE" ${LOOM_EXTRA:-} --json
      # shellcheck disable=SC2086
      run "$TMP/llamad.$i.$r.json" "$TMP/err" "llama-bench -d $DEPTH" \
        "$LLAMA_BENCH" -m "$model" -p "$P" -n "$N" -d "$DEPTH" -t "$THREADS" -r 1 -fa "$LLAMA_FA" \
        -ctk "$CTYPE" -ctv "$CTYPE" ${LLAMA_EXTRA:-} -o json
    fi
    r=$((r + 1))
  done
  python3 - "$TMP" "$i" "$ROUNDS" "$model" "$P" "$N" "$DEPTH" "$DEPTH_ONLY" <<'EOF' || die "could not parse the results of $model (see above)"
import json, os, statistics, sys

tmp, i, rounds, model, P, N, depth, depth_only = sys.argv[1:9]
rounds, P, N, depth, depth_only = int(rounds), int(P), int(N), int(depth), depth_only == "1"

def load(path):
    with open(path) as f:
        text = f.read()
    try:
        return json.loads(text)
    except ValueError as e:
        sys.exit("vs-llamacpp: error: %s is not JSON (%s): %r" % (path, e, text[:200]))

def llama_ts(doc, kind, d):
    # llama-bench -o json: a list of tests; pp has n_gen 0, tg has n_prompt 0
    for t in doc:
        if t.get("n_depth", 0) != d:
            continue
        if kind == "pp" and t["n_prompt"] == P and t["n_gen"] == 0:
            return float(t["avg_ts"])
        if kind == "tg" and t["n_gen"] == N and t["n_prompt"] == 0:
            return float(t["avg_ts"])
    sys.exit("vs-llamacpp: error: no %s test (depth %d) in llama-bench's output" % (kind, d))

rows = []  # (label, loom values, llama values)
kinds = [k for k, size in (("pp", P), ("tg", N)) if size > 0]
meta = None
def loom_ts(path, kind, d):
    doc = load(path)
    v = doc.get(kind + "_tps")
    if v is None:
        sys.exit("vs-llamacpp: error: no %s_tps in loom bench --json output %s" % (kind, path))
    if doc.get("depth", 0) != d:
        sys.exit("vs-llamacpp: error: loom bench ran at depth %s, not %d (an old loom binary?)"
                 % (doc.get("depth"), d))
    return doc, float(v)

passes = [] if depth_only else [(0, "loom", "llama", "")]
if depth > 0:
    passes.append((depth, "loomd", "llamad", " @ d%d" % depth))
for d, lpfx, lmpfx, sfx in passes:
    for kind in kinds:
        lo, ll = [], []
        for r in range(1, rounds + 1):
            meta, v = loom_ts(os.path.join(tmp, "%s.%s.%d.json" % (lpfx, i, r)), kind, d)
            lo.append(v)
            ll.append(llama_ts(load(os.path.join(tmp, "%s.%s.%d.json" % (lmpfx, i, r))), kind, d))
        rows.append(("%s%d%s" % (kind, P if kind == "pp" else N, sfx), lo, ll))

def f(x):
    return "%.1f" % x

name = os.path.basename(model)
lmeta = load(os.path.join(tmp, "%s.%s.1.json" % ("llamad" if depth_only else "llama", i)))[0]
desc = ""
if meta:
    desc = " (%s, %s, %.1f MiB)" % (meta.get("arch", "?"), meta.get("file_type", "?"),
                                    meta.get("model_bytes", 0) / 1048576.0)
print()
print("## %s%s" % (name, desc))
print()
print("llama.cpp build %s (%s), Loom %d threads, llama.cpp %d threads, flash attention %s, "
      "KV cache Loom %s / llama.cpp %s/%s." % (
    lmeta.get("build_commit", "?"), lmeta.get("cpu_info", "?"),
    meta.get("n_threads", 0) if meta else 0, lmeta.get("n_threads", 0),
    "on" if lmeta.get("flash_attn") else "off", meta.get("cache_type", "?") if meta else "?",
    lmeta.get("type_k", "?"), lmeta.get("type_v", "?")))
print()
print("| test | llama.cpp t/s | Loom t/s | Loom/llama.cpp | llama.cpp rounds | Loom rounds |")
print("|---|---:|---:|---:|---|---|")
for label, lo, ll in rows:
    mll = statistics.median(ll)
    m = statistics.median(lo)
    mlo = f(m)
    ratio = "%.2f" % (m / mll) if mll > 0 else "n/a"
    rlo = " ".join(f(x) for x in lo)
    print("| %s | %s | %s | %s | %s | %s |" % (label, f(mll), mlo, ratio,
                                               " ".join(f(x) for x in ll), rlo))

# one summary row per file (the issue-22 layout), printed after the last file
cells = []
for label, lo, ll in rows:
    mll = statistics.median(ll)
    m = statistics.median(lo)
    cells += [f(mll), f(m), "%.2f" % (m / mll) if mll > 0 else "n/a"]
with open(os.path.join(tmp, "summary"), "a") as out:
    if i == "1":
        out.write("| file | type | " + " | ".join(
            "llama.cpp %s | Loom %s | ratio" % (l, l) for l, _, _ in rows) + " |\n")
        out.write("|---|---|" + "---:|---:|---:|" * len(rows) + "\n")
    out.write("| %s | %s | %s |\n" % (name, meta.get("file_type", "?") if meta else "?",
                                      " | ".join(cells)))
EOF
done

if [ "$#" -gt 1 ]; then
  printf '\n## Summary (medians of %s rounds, %s threads)\n\n' "$ROUNDS" "$THREADS"
  cat "$TMP/summary"
fi
