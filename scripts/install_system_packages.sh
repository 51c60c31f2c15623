#!/usr/bin/env bash
# Installs the Debian packages the build and tests need (GoogleTest, OpenBLAS, oneDNN, Ninja,
# ccache; iproute2 for the two-namespace distributed test),
# skipping the package manager entirely when they are already present.
set -euo pipefail

packages=(libgtest-dev libopenblas-dev libdnnl-dev ninja-build ccache g++ cmake iproute2)
missing=()
for package in "${packages[@]}"; do
  dpkg -s "$package" >/dev/null 2>&1 || missing+=("$package")
done
[ ${#missing[@]} -eq 0 ] && exit 0

echo "installing system packages: ${missing[*]}"
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
$sudo_cmd apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${missing[@]}"
