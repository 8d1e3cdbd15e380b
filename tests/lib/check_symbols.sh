#!/bin/sh
# test_lib_symbols: every symbol that libloom.a or libloom.so defines as global or weak
# is a loom_* name (the rest are made local when the libraries are made:
# cmake/library.cmake), so Loom links next to any other library (ggml's gguf_*,
# jansson's utf8_encode, ...). libloom.a: `nm -g` (what a static link sees);
# libloom.so: `nm -D` (the dynamic symbol table: what it exports) and `nm -g`.
# Usage: check_symbols.sh NM libloom.a libloom.so   Exit status 0: all loom_*.
# No allow-list: nothing needs one.
nm=$1
shift
fail=0
for lib in "$@"; do
    case $lib in
    *.a) tables="-g" ;;
    *) tables="-D -g" ;;
    esac
    for t in $tables; do
        # lines "VALUE TYPE NAME" (archives add "member.o:" and blank lines)
        if ! out=$("$nm" $t --defined-only "$lib"); then
            echo "FAIL: $nm $t --defined-only $lib"
            fail=1
            continue
        fi
        syms=$(printf '%s\n' "$out" | awk 'NF == 3 { print $3 }')
        n_all=$(printf '%s\n' "$syms" | grep -c .)
        bad=$(printf '%s\n' "$syms" | grep -v '^loom_' | grep . | sort -u)
        echo "$lib (nm $t): $n_all global symbols defined"
        if [ -n "$bad" ]; then
            echo "FAIL: $lib (nm $t): $(printf '%s\n' "$bad" | wc -l) global symbol(s) without the loom_ prefix:"
            printf '%s\n' "$bad" | sed 's/^/  /'
            fail=1
        fi
        # the API is there (a library emptied by a broken link would pass the above)
        for need in loom_model_open loom_tokenize loom_status_name; do
            if ! printf '%s\n' "$syms" | grep -qx "$need"; then
                echo "FAIL: $lib (nm $t): $need is not defined"
                fail=1
            fi
        done
    done
done
[ $# -ge 1 ] || { echo "FAIL: no library given"; fail=1; }
if [ "$fail" -eq 0 ]; then echo "test_lib_symbols: passed"; fi
exit "$fail"
