#!/usr/bin/env bash
# The browser tests drive Debian's Chromium with playwright-core (never a downloaded browser build).
# Installs it when it is missing; needs root (as on CI and the project's machines).
set -euo pipefail
if command -v chromium >/dev/null 2>&1; then exit 0; fi
echo "ensure-chromium: installing Debian's chromium for the browser tests" >&2
if [ "$(id -u)" -ne 0 ]; then
  echo "ensure-chromium: not root; install it with: sudo apt-get install -y chromium" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq >/dev/null
apt-get install -y -qq --no-install-recommends chromium >/dev/null
command -v chromium >/dev/null
