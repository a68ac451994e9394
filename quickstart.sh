#!/usr/bin/env bash
# Installs what is missing, builds, and runs the quickstart experiment on the local
# default tree (a master and four workers on loopback), printing its results.
set -euo pipefail
cd "$(dirname "$0")"
tools/bootstrap.sh
exec build/bin/treefarm run examples/quickstart.toml --out out/quickstart "$@"
