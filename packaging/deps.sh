#!/usr/bin/env bash
# Installs what `make dist` and the arm64 tests need, only when it is
# missing: Debian's aarch64 cross compiler, the arm64 libseccomp (a static
# library, from multiarch) and qemu-user with binfmt_misc, so arm64 binaries
# and test binaries run on this amd64 host. Assumes a Debian/Ubuntu amd64
# host. Idempotent and quiet, like .ci/deps.sh; needs root (or sudo).
set -euo pipefail
sudo_cmd=""
[ "$(id -u)" -eq 0 ] || sudo_cmd="sudo"
installed() { dpkg-query -W -f='${Status}' "$1" 2>/dev/null | grep -q "install ok installed"; }

if ! dpkg --print-foreign-architectures | grep -qx arm64; then
  echo "deps: adding the arm64 architecture (for libseccomp-dev:arm64)"
  $sudo_cmd dpkg --add-architecture arm64
fi
need=()
for pkg in gcc-aarch64-linux-gnu libc6-dev-arm64-cross libseccomp-dev:arm64 qemu-user-static binfmt-support; do
  installed "$pkg" || need+=("$pkg")
done
if [ ${#need[@]} -gt 0 ]; then
  echo "deps: installing ${need[*]}"
  $sudo_cmd apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo_cmd apt-get install -y -qq "${need[@]}" >/dev/null
fi

# binfmt_misc runs an aarch64 ELF through qemu-aarch64-static. In a
# container the mount may be missing; the registration needs it.
if [ ! -e /proc/sys/fs/binfmt_misc/status ]; then
  $sudo_cmd mount -t binfmt_misc binfmt_misc /proc/sys/fs/binfmt_misc
fi
if ! grep -qx enabled /proc/sys/fs/binfmt_misc/qemu-aarch64 2>/dev/null; then
  $sudo_cmd update-binfmts --enable qemu-aarch64 >/dev/null 2>&1 || {
    echo "deps: could not register qemu-aarch64 with binfmt_misc (update-binfmts --enable qemu-aarch64); arm64 binaries will not run here" >&2
    exit 1
  }
fi
