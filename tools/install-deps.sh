#!/usr/bin/env bash
# Installs the Debian packages libpyop needs to build and test, if missing.
# Idempotent: prints nothing and does nothing when all are present.
set -euo pipefail
# python3-pytest: the op author guide runs pyop.testing.opcheck tests with
# `python3.11 -m pytest` (tests/install/pytest_guide.sh does as it says).
pkgs=(build-essential cmake pkg-config libffi-dev libcmocka-dev
      python3.11 python3.11-dev libpython3.11-dev python3-numpy python3-pytest
      valgrind clang libclang-rt-14-dev)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  echo "install-deps: installing: ${missing[*]}"
  sudo=""
  [ "$(id -u)" -eq 0 ] || sudo="sudo"
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
