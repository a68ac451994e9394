#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole test suite through CTest.
set -euo pipefail
cd "$(dirname "$0")"
tools/bootstrap.sh
cd build
exec ctest --output-on-failure --timeout 600 -j "${TREEFARM_TEST_JOBS:-2}" "$@"
