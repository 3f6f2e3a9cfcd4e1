#!/bin/sh
# Installs what integration/vm needs on a Debian host: QEMU (TCG only, no KVM needed),
# a static busybox for the guest, cpio for the initramfs, file(1) to refuse dynamic
# binaries early; apt-get and dpkg-deb (always present on Debian) fetch the kernels.
# VM_ARCH=arm64 (run.sh's) also wants qemu-system-aarch64 and the arm64 architecture in
# the apt lists (dpkg --add-architecture arm64), where the guest's kernel and busybox come from.
# Idempotent and quiet: does nothing when everything is present.
set -eu
arch=${VM_ARCH:-amd64}

missing=""
need() { # need PACKAGE FILE: install PACKAGE when FILE is absent
	[ -e "$2" ] || missing="$missing $1"
}
need qemu-system-x86 /usr/bin/qemu-system-x86_64
need busybox-static /bin/busybox
need cpio /usr/bin/cpio
need file /usr/bin/file
[ "$arch" = amd64 ] || need qemu-system-arm /usr/bin/qemu-system-aarch64

# busybox (the dynamic one) also provides /bin/busybox; the guest needs the static one.
if [ -e /bin/busybox ] && ! dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed'; then
	missing="$missing busybox-static"
fi

# The guests' kernels come from the apt lists (run.sh): on a fresh machine the lists
# may never have been fetched, or be too old to name the current packages.
if [ "$arch" != amd64 ] && ! dpkg --print-foreign-architectures | grep -qx "$arch"; then
	[ "$(id -u)" -eq 0 ] || { echo "integration/vm/deps.sh: the apt lists lack $arch: run as root or: sudo dpkg --add-architecture $arch && sudo apt-get update" >&2; exit 1; }
	dpkg --add-architecture "$arch"
fi
if [ "$(id -u)" -eq 0 ] && [ "$(apt-cache policy "linux-image-cloud-$arch:$arch" "linux-image-6.12-cloud-$arch:$arch" 2>/dev/null |
	grep -c 'Candidate: [0-9]')" -lt 2 ]; then
	apt-get update -qq >/dev/null
fi

[ -n "$missing" ] || exit 0

if [ "$(id -u)" -ne 0 ]; then
	echo "integration/vm/deps.sh: missing packages:$missing; run as root or: sudo apt-get install$missing" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Refresh the package lists once if an install fails on stale lists.
# shellcheck disable=SC2086
apt-get install -y -qq --no-install-recommends $missing >/dev/null 2>&1 || {
	apt-get update -qq >/dev/null
	apt-get install -y -qq --no-install-recommends $missing >/dev/null
}
