#!/usr/bin/env bash
# Make Debian's Chromium available for the browser tests (tests/browser/), installing the
# chromium and chromium-driver packages when it is missing and we may (root, or sudo with
# no password). Prints the browser's path as its only stdout line; exits 1 with the reason
# on stderr when it cannot. Never prompts; every step has a time limit.
set -euo pipefail

CHROMIUM=${REDUCTION_CHROMIUM:-/usr/bin/chromium}
if [ -x "$CHROMIUM" ]; then
  echo "$CHROMIUM"
  exit 0
fi

if [ "$(id -u)" = 0 ]; then
  SUDO=()
elif command -v sudo >/dev/null 2>&1 && sudo -n true 2>/dev/null; then
  SUDO=(sudo -n)
else
  echo "ensure_chromium: $CHROMIUM is missing and installing it needs root (apt-get install chromium chromium-driver)" >&2
  exit 1
fi
if ! command -v apt-get >/dev/null 2>&1; then
  echo "ensure_chromium: $CHROMIUM is missing and this machine has no apt-get" >&2
  exit 1
fi

echo "ensure_chromium: installing Debian's chromium and chromium-driver" >&2
export DEBIAN_FRONTEND=noninteractive
timeout 600 "${SUDO[@]}" apt-get update -qq >&2
timeout 900 "${SUDO[@]}" apt-get install -y -qq chromium chromium-driver fonts-dejavu-core >&2
if [ ! -x "$CHROMIUM" ]; then
  echo "ensure_chromium: the install finished but $CHROMIUM is still missing" >&2
  exit 1
fi
echo "$CHROMIUM"
