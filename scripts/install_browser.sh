#!/usr/bin/env bash
# Optional: installs Debian's Chromium (about 300 MB), which the HTML-report test uses to render
# `openneuron check` reports headlessly. Without it that test is skipped; `make test` works.
set -euo pipefail

command -v chromium >/dev/null 2>&1 && exit 0
sudo_cmd=""
[ "$(id -u)" -ne 0 ] && sudo_cmd="sudo"
$sudo_cmd apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq --no-install-recommends chromium
