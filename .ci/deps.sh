#!/usr/bin/env bash
# Installs what tooljail's build and host tests need, only when it is missing.
# QEMU and the guest kernels are installed by `make vm` (integration/vm/deps.sh),
# the only target that boots guests.
# Idempotent and quiet; needs root (or sudo) for apt-get.
set -euo pipefail
need=()
for pkg in gcc libc6-dev libseccomp-dev pkg-config util-linux; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
# The Python client's tests (make python): any python3 on PATH will do.
command -v python3 >/dev/null || need+=(python3)
# The python profile's workload (integration/workloads_lang_test.go): pytest
# in a virtualenv of Debian's python3.
for pkg in python3-venv python3-pytest; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
# Shell completion tests (cmd/tooljail/completion_test.go) and the man page
# check (cmd/tooljail/manpage_test.go, groff).
for pkg in zsh fish groff-base; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "deps: installing ${need[*]}"
  sudo_cmd=""
  [ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi
command -v go >/dev/null || { echo "deps: Go 1.26 or later is needed (https://go.dev/dl/)"; exit 1; }
