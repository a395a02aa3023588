#!/bin/sh
# install-deps.sh [build|test]: installs the Debian packages mpegenc needs,
# but only those that are missing, so repeated runs are quick and need no
# network.  build (make demo): what building and running the encoder takes;
# test (the default, make test): also the independent decoders, PoCL for the
# OpenCL tests, and the tools the tests drive (chromium for the report's
# screenshot, valgrind, clang for the fuzzers), and Open MPI for mpegenc-mpi
# (tests/e2e/mpi.sh; the plain build does not need it).
set -e
build_pkgs="gcc make pkg-config libpng-dev zlib1g-dev libdeflate-dev libfftw3-dev ocl-icd-opencl-dev opencl-headers"
case "${1:-test}" in
build) pkgs=$build_pkgs ;;
test)  pkgs="$build_pkgs ffmpeg mpeg2dec pocl-opencl-icd python3 chromium valgrind clang time openmpi-bin libopenmpi-dev" ;;
*)     echo "usage: $0 [build|test]" >&2; exit 2 ;;
esac
missing=""
for p in $pkgs; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing="$missing $p"
done
[ -z "$missing" ] && exit 0
echo "installing:$missing"
if [ "$(id -u)" -eq 0 ]; then SUDO=""; else SUDO="sudo"; fi
export DEBIAN_FRONTEND=noninteractive
$SUDO apt-get update -q || true
$SUDO apt-get install -y -q --no-install-recommends $missing
