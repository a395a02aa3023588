#!/bin/sh
# headers.sh HEADER...: the project headers HEADER includes, directly or
# through others ("dir/name.h" includes, paths from the repository root),
# HEADER itself included, one per line: what `make install` must copy so
# that <mpegenc.h> compiles outside the tree.
set -e
cd "$(dirname "$0")/.."
todo="$*" seen=""
while [ -n "$todo" ]; do
    set -- $todo
    h=$1; shift; todo="$*"
    case " $seen " in *" $h "*) continue ;; esac
    seen="$seen $h"
    echo "$h"
    for inc in $(sed -n 's/^[[:space:]]*#[[:space:]]*include[[:space:]]*"\([a-z_]*\/[a-z_0-9]*\.h\)".*/\1/p' "$h"); do
        todo="$todo $inc"
    done
done
