#!/usr/bin/env bash
# End-to-end: `make install` into a temporary prefix (a side build in its
# own folder, so the binaries under test stay as they are) gives the
# binaries, the headers, the static and shared libraries, a pkg-config file
# and man pages made from --help; examples/encode.c builds against it
# through pkg-config (shared and static) and its streams are byte-identical
# to mpegenc's with the same options.
. "$(dirname "$0")/lib.bash"

[ -x "$MPEGENC" ] || { fail build "$MPEGENC not built"; exit 1; }
if grep -qa -e __asan_init -e __tsan_init -e __msan_init "$MPEGENC"; then
    skip all "install is checked on the plain build"; exit 0
fi
if ! have ffmpeg || ! have pkg-config || ! have make; then
    skip all "ffmpeg, pkg-config or make missing (make test installs them)"; exit 0
fi

P=$TMP/prefix
# CUDA=0 keeps the side build quick; the CUDA objects install the same way
if ! make -s -C "$ROOT" install BUILD="$TMP/build" PREFIX="$P" CUDA=0 >"$TMP/make.log" 2>&1; then
    fail make-install "$(tail -5 "$TMP/make.log")"; exit 0
fi
pass make-install
missing=""
for f in bin/mpegenc bin/mpegenc-iqa lib/libmpegenc.a lib/libmpegenc.so.0 lib/libmpegenc.so \
         lib/pkgconfig/mpegenc.pc include/mpegenc/mpegenc.h include/mpegenc/encoder/encoder.h \
         include/mpegenc/encoder/param.h include/mpegenc/common/common.h \
         include/mpegenc/common/picture.h include/mpegenc/input/input.h include/mpegenc/iqa/metric.h \
         share/man/man1/mpegenc.1 share/man/man1/mpegenc-iqa.1; do
    [ -e "$P/$f" ] || missing="$missing $f"
done
# mpegenc-mpi where an MPI compiler wrapper builds it
if have mpicc && [ ! -x "$P/bin/mpegenc-mpi" ]; then missing="$missing bin/mpegenc-mpi"; fi
check installed-files "missing:$missing" [ -z "$missing" ]
check installed-binary-runs "$("$P/bin/mpegenc" --version 2>&1)" sh -c "'$P/bin/mpegenc' --version | grep -q '^mpegenc [0-9]'"
soname=$(objdump -p "$P/lib/libmpegenc.so.0" 2>/dev/null | awk '$1 == "SONAME" { print $2 }')
check shared-soname "SONAME '$soname'" [ "$soname" = libmpegenc.so.0 ]

# every option of --help is in the man page
left=""
for opt in $("$P/bin/mpegenc" --help | grep -o -- '--[a-z][a-z-]*' | sort -u); do
    grep -q -- "$(printf '%s' "$opt" | sed 's/-/\\\\-/g')" "$P/share/man/man1/mpegenc.1" || left="$left $opt"
done
check man-page-options "not in the man page:$left" [ -z "$left" ]
check man-page-header "no .TH" grep -q '^\.TH MPEGENC 1' "$P/share/man/man1/mpegenc.1"

export PKG_CONFIG_PATH=$P/lib/pkgconfig
make_y4m "$TMP/clip.y4m" 96x64 8
"$MPEGENC" --quiet -i "$TMP/clip.y4m" -o "$TMP/cli.m2v" --q 5 --gop 4
if cc -Wall -Wextra -Werror "$ROOT/examples/encode.c" $(pkg-config --cflags --libs mpegenc) \
        -o "$TMP/encode_shared" 2>"$TMP/cc.err"; then
    LD_LIBRARY_PATH=$P/lib "$TMP/encode_shared" "$TMP/clip.y4m" "$TMP/ex_shared.m2v" q=5 gop=4 >"$TMP/ex.out" 2>&1
    check example-shared "$(cat "$TMP/ex.out")" cmp -s "$TMP/ex_shared.m2v" "$TMP/cli.m2v"
    n=$(grep -c '^picture ' "$TMP/ex.out")
    check example-records "$n records printed, expected 8" [ "$n" = 8 ]
else
    fail example-shared "does not build: $(head -c 400 "$TMP/cc.err")"
fi
if cc "$ROOT/examples/encode.c" $(pkg-config --cflags mpegenc) -L"$P/lib" -Wl,-Bstatic -lmpegenc \
        -Wl,-Bdynamic $(pkg-config --static --libs mpegenc) -o "$TMP/encode_static" 2>"$TMP/cc.err"; then
    "$TMP/encode_static" "$TMP/clip.y4m" "$TMP/ex_static.m2v" q=5 gop=4 >/dev/null 2>&1
    check example-static "stream differs" cmp -s "$TMP/ex_static.m2v" "$TMP/cli.m2v"
    check example-static-no-so "linked against the shared library" sh -c "! ldd '$TMP/encode_static' | grep -q libmpegenc"
else
    fail example-static "does not build: $(head -c 400 "$TMP/cc.err")"
fi
exit 0
