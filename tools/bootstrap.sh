#!/usr/bin/env bash
# Installs the Debian packages treefarm needs (only the missing ones; apt-get update
# first), then configures and builds incrementally into build/. Sourced by
# quickstart.sh and test.sh; usable alone: tools/bootstrap.sh
set -euo pipefail

TREEFARM_ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
PACKAGES=(
  build-essential cmake ninja-build pkg-config
  libtbb-dev libzmq3-dev cppzmq-dev libhwloc-dev hwloc libcli11-dev
  libgtest-dev libgmock-dev libbenchmark-dev
  coinor-libclp-dev coinor-libipopt-dev libopenblas-dev libopenblas0-serial
  nlohmann-json3-dev libtomlplusplus-dev libspdlog-dev libfmt-dev
  libsimgrid-dev gnuplot-nox iproute2 nftables util-linux procps
  clang libclang-rt-14-dev libsodium-dev
  libmsgpack-cxx-dev libabsl-dev libboost-dev
  libcpp-httplib-dev libjs-chart.js chromium chromium-driver
  dpkg-dev help2man openssh-client openssh-server slurm-wlm munge
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "treefarm: installing ${missing[*]}"
  SUDO=""
  if [ "$(id -u)" -ne 0 ]; then
    if command -v sudo >/dev/null; then SUDO="sudo"; else
      echo "treefarm: need root or sudo to install: ${missing[*]}" >&2; exit 1
    fi
  fi
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi

JOBS="${TREEFARM_JOBS:-$(nproc)}"
# Warnings are errors when TREEFARM_WERROR=ON, or when CI is set and TREEFARM_WERROR is not
# (passed explicitly: CMake keeps an option's first value in an existing build/ cache).
werror=()
if [ -n "${TREEFARM_WERROR:-}" ]; then werror=("-DTREEFARM_WERROR=${TREEFARM_WERROR}")
elif [ -n "${CI:-}" ]; then werror=("-DTREEFARM_WERROR=ON"); fi
cmake -S "$TREEFARM_ROOT" -B "$TREEFARM_ROOT/build" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo "${werror[@]}" \
  -DTREEFARM_FUZZ="${TREEFARM_FUZZ:-ON}" >/dev/null
cmake --build "$TREEFARM_ROOT/build" -j "$JOBS"
