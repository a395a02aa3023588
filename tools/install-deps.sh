#!/bin/sh
# Installs the Debian packages mpegenc needs to build and test, but only those
# that are missing, so repeated runs are quick and need no network.
set -e
pkgs="gcc make pkg-config libpng-dev zlib1g-dev ffmpeg mpeg2dec ocl-icd-opencl-dev opencl-headers pocl-opencl-icd libfftw3-dev python3 chromium valgrind clang time"
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
