#!/usr/bin/env bash
# Installs what tl builds with on Debian 12 (bookworm). Safe to run again: it only
# calls apt-get when a package is missing.
set -euo pipefail
PKGS=(build-essential cmake ccache git pkg-config
      llvm-22-dev liblld-22-dev clang-22 libclang-rt-22-dev lld-22 libamd-comgr-dev
      libboost-dev libfmt-dev nlohmann-json3-dev libxxhash-dev libzstd-dev zlib1g-dev libedit-dev libcurl4-openssl-dev
      libgtest-dev libgmock-dev libbenchmark-dev python3
      dpkg-dev file)  # the Debian package (cmake/install.cmake): dpkg-shlibdeps, file
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
  echo "tl: installing ${missing[*]}"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "${missing[@]}"
fi
