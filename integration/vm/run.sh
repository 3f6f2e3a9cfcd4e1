#!/bin/bash
# Boots one of Debian's packaged kernels under QEMU (TCG) from an initramfs holding the
# static test binary and runs it as root and as uid 65534 on a pure cgroup v2 hierarchy.
#
#   integration/vm/run.sh SERIES TESTBIN [ARGS...]      e.g.  run.sh 6.12 ./integration.test -test.v
#
# SERIES is a kernel series (6.1, 6.12); TESTBIN a static binary (CGO_ENABLED=0 go test -c).
# Environment (all optional):
#   TOOLJAIL, TJHELPER, TJSYS, TOOLJAIL_TESTHOOKS  host paths of static binaries; in
#                        the guest they are in /suite/bin (tooljail, tjhelper, tjsys,
#                        tooljail-testhooks) and the suite gets the variables pointing there.
#   VM_FILES             space-separated host files copied to /suite/files/ (basename kept)
#   VM_ENV               newline-separated NAME=VALUE lines added to the suite's environment
#   VM_USERS             which suites to run, in order: "root user" (default); root-nouserns
#                        and user-nouserns run the tests of the mode without namespaces
#                        after user.max_user_namespaces=0 (from then on: put them last)
#   VM_TIMEOUT           hard limit in seconds for the whole boot and run (default 900)
#   VM_BOOT_TRIES        boots in all when a kernel dies before the guest is ready,
#                        panics, or a run fails with a guest clock far from the host's
#                        (default 2; no other failure is retried)
#   VM_FREEZE_AFTER      amd64: seconds without the guest's heartbeat after which it counts
#                        as frozen and gets an NMI, whose panic names where it was stuck
#                        (default 300; the boot is then retried like a panic)
#   VM_MEM, VM_SMP       guest memory in MiB (default 3072) and CPUs (default 2)
#   VM_LOG               serial console log (default .cache/logs/SERIES.log)
#   VM_QUIET=1           do not echo the console while it runs (the log is still written
#                        and its tail shown on failure)
#   VM_KERNEL_PKG        exact Debian package to boot instead of the newest of SERIES
#   VM_ARCH              amd64 (default: qemu-system-x86_64) or arm64 (qemu-system-aarch64
#                        -M virt, Debian's arm64 cloud kernel and arm64 busybox-static from
#                        the apt lists' arm64 architecture); TESTBIN and the binaries must be
#                        built for it (GOARCH=arm64)
#   VM_CACHE             cache directory (default integration/vm/.cache)
# Exit status: the suites' combined status (0 only if every suite passed); 2 on a boot
# failure, panic, freeze, timeout or missing result marker (the console tail says which).
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
prog=integration/vm/run.sh
die() { echo "$prog: $*" >&2; exit 2; }

[ $# -ge 2 ] || die "usage: $prog SERIES TESTBIN [ARGS...]"
series=$1 testbin=$2
shift 2
[[ $series =~ ^[0-9]+\.[0-9]+$ ]] || die "series must look like 6.1 or 6.12, got '$series'"
[ -f "$testbin" ] && [ -x "$testbin" ] || die "test binary $testbin is not an executable file"

arch=${VM_ARCH:-amd64}
case $arch in
amd64) qemu=qemu-system-x86_64 elf_arch=x86-64 ;;
arm64) qemu=qemu-system-aarch64 elf_arch="ARM aarch64" ;;
*) die "VM_ARCH must be amd64 or arm64, got '$arch'" ;;
esac
for t in $qemu cpio file dpkg-deb apt-get apt-cache timeout flock; do
	command -v $t >/dev/null || die "$t not found: run integration/vm/deps.sh"
done

# A dynamically linked binary would fail in the guest with a confusing ENOENT, and one
# for the other architecture with ENOEXEC; say why now.
check_static() {
	local f
	f=$(file -bL "$1")
	case "$f" in
	*ELF*dynamically\ linked*) die "$1 is dynamically linked; build it with CGO_ENABLED=0 or -extldflags -static" ;;
	esac
	case "$f" in
	*ELF*", $elf_arch,"*) ;;
	*) die "$1 is not an $elf_arch executable for the $arch guest (${f%%,*}...); build it with GOARCH=$arch" ;;
	esac
}
check_static "$testbin"

cache=${VM_CACHE:-$here/.cache}
mkdir -p "$cache/kernels" "$cache/logs"
# label names the kernel in logs and messages: the series, prefixed by a non-default arch.
label=$series
[ "$arch" = amd64 ] || label="$arch-$series"

# The guest's busybox: the host's static one for amd64; for arm64 Debian's
# busybox-static:arm64, downloaded (hash-checked by apt) and cached once per version.
guest_busybox() {
	if [ "$arch" = amd64 ]; then
		file -b /bin/busybox 2>/dev/null | grep -q 'statically linked' ||
			dpkg-query -W -f='${Status}' busybox-static 2>/dev/null | grep -q 'ok installed' ||
			die "static busybox missing: run integration/vm/deps.sh"
		echo /bin/busybox
		return
	fi
	local ver bb tmp
	ver=$(apt-cache policy "busybox-static:$arch" 2>/dev/null | sed -n 's/^ *Candidate: //p')
	if [ -z "$ver" ] || [ "$ver" = "(none)" ]; then
		bb=$(ls "$cache/busybox-$arch"_* 2>/dev/null | sort -V | tail -n1 || true)
		[ -n "$bb" ] || die "busybox-static:$arch is not in the apt lists and none is cached: dpkg --add-architecture $arch && apt-get update"
		echo "$bb"
		return
	fi
	bb="$cache/busybox-${arch}_$ver"
	if [ ! -x "$bb" ]; then
		tmp=$(mktemp -d "$cache/.bb.XXXXXX")
		(cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "busybox-static:$arch=$ver") >&2 &&
			dpkg-deb --fsys-tarfile "$tmp"/*.deb | tar -x -C "$tmp" ./bin/busybox &&
			mv "$tmp/bin/busybox" "$bb" || { rm -rf "$tmp"; die "apt-get download busybox-static:$arch=$ver failed"; }
		rm -rf "$tmp"
	fi
	echo "$bb"
}

# ---- kernel: newest Debian cloud kernel of the series reachable through apt ----
# The cloud flavour boots faster (fewer drivers) and has everything needed built in:
# 8250 console, tmpfs, devtmpfs, cgroup v2 controllers, user namespaces, seccomp and
# Landlock (in Debian's CONFIG_LSM default list), so no modules are loaded.
kernel_pkg() {
	if [ -n "${VM_KERNEL_PKG:-}" ]; then
		echo "$VM_KERNEL_PKG"
		return
	fi
	local meta dep
	# bookworm's own series uses the plain meta package; newer series (6.12 in
	# bookworm-security) have linux-image-SERIES-cloud-ARCH. arm64 is a foreign
	# architecture here (multiarch): apt names its packages NAME:arm64.
	for meta in "linux-image-$series-cloud-$arch:$arch" "linux-image-cloud-$arch:$arch"; do
		dep=$(apt-cache depends --important "$meta" 2>/dev/null |
			sed -n 's/^ *Depends: \(linux-image-[^:]*\).*$/\1/p' | head -n1)
		case "$dep" in
		linux-image-"$series".[0-9]*-cloud-"$arch" | linux-image-"$series"-[0-9]*-cloud-"$arch")
			echo "$dep"
			return
			;;
		esac
	done
	return 1
}

fetch_kernel() { # prints the directory holding vmlinuz for the series
	local pkg ver dir deb tmp
	if ! pkg=$(kernel_pkg); then
		# Offline or not in the apt lists: fall back to what is cached for the series.
		dir=$(ls -d "$cache/kernels/linux-image-$series"[.-]*-cloud-"$arch"_* 2>/dev/null | sort -V | tail -n1 || true)
		[ -n "$dir" ] && [ -f "$dir/vmlinuz" ] || die "no Debian cloud kernel package for series $series in the apt lists (apt-cache search linux-image-$series) and none cached"
		echo "$prog: apt has no kernel for $series; using cached $(basename "$dir")" >&2
		echo "$dir"
		return
	fi
	ver=$(apt-cache policy "$pkg:$arch" | sed -n 's/^ *Candidate: //p')
	[ -n "$ver" ] && [ "$ver" != "(none)" ] || die "no candidate version for $pkg"
	dir="$cache/kernels/${pkg}_$ver"
	# modules/: what the suites load (a cache from before they did is fetched again).
	if [ -f "$dir/vmlinuz" ] && [ -d "$dir/modules" ]; then
		echo "$dir"
		return
	fi
	tmp=$(mktemp -d "$cache/kernels/.dl.XXXXXX")
	# apt-get download checks the .deb against the hash in the signed Release/Packages.
	(cd "$tmp" && apt-get download -qq -o APT::Sandbox::User=root "$pkg:$arch=$ver") >&2 ||
		{ rm -rf "$tmp"; die "apt-get download $pkg=$ver failed"; }
	deb=$(ls "$tmp"/*.deb)
	mkdir -p "$tmp/x"
	# The cloud kernels build overlayfs and loop as modules: --changes needs the one,
	# and on 6.1, whose tmpfs has no user.* xattrs, the other for an ext2 scratch
	# file system to keep change stores on (init.sh loads them).
	dpkg-deb --fsys-tarfile "$deb" | tar -x -C "$tmp/x" --wildcards './boot/vmlinuz-*' './boot/config-*' \
		'*/kernel/fs/overlayfs/overlay.ko*' '*/kernel/drivers/block/loop.ko*' ||
		{ rm -rf "$tmp"; die "extract vmlinuz and modules from $deb failed"; }
	mkdir -p "$tmp/k/modules"
	mv "$tmp"/x/boot/vmlinuz-* "$tmp/k/vmlinuz"
	mv "$tmp"/x/boot/config-* "$tmp/k/config"
	find "$tmp/x" -name '*.ko*' -exec mv {} "$tmp/k/modules/" \;
	for m in "$tmp"/k/modules/*.ko.xz; do
		[ -f "$m" ] && { xz -dq "$m" || { rm -rf "$tmp"; die "unxz $m failed"; }; }
	done
	echo "$pkg $ver" >"$tmp/k/package"
	rm -rf "$dir"
	mv "$tmp/k" "$dir"
	rm -rf "$tmp"
	echo "$dir"
}

# Serialise kernel fetches of the same series between concurrent runs.
exec 9>"$cache/kernels/.lock-$label"
flock 9
kdir=$(fetch_kernel)
busybox=$(guest_busybox)
flock -u 9
check_static "$busybox"
kcfg="$kdir/config"
console=CONFIG_SERIAL_8250_CONSOLE
[ "$arch" = amd64 ] || console=CONFIG_SERIAL_AMBA_PL011_CONSOLE
for opt in $console CONFIG_DEVTMPFS CONFIG_TMPFS CONFIG_BLK_DEV_INITRD \
	CONFIG_MEMCG CONFIG_CGROUP_PIDS CONFIG_CFS_BANDWIDTH CONFIG_USER_NS CONFIG_SECCOMP_FILTER \
	CONFIG_SECURITY_LANDLOCK; do
	grep -q "^$opt=y" "$kcfg" || die "$(cat "$kdir/package"): $opt is not built in; this harness loads no modules"
done
# Landlock must be in the active LSM list; Debian's default CONFIG_LSM has it first. Pass
# the same list explicitly so a changed default cannot silently drop it.
lsm=$(sed -n 's/^CONFIG_LSM="\(.*\)"$/\1/p' "$kcfg")
case ",$lsm," in *,landlock,*) ;; *) lsm="landlock,$lsm" ;; esac

# ---- initramfs ----
work=$(mktemp -d "${TMPDIR:-/tmp}/tjvm.XXXXXX")
qpid=
cleanup() {
	[ -z "$qpid" ] || kill "$qpid" 2>/dev/null || true
	rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

root="$work/root"
mkdir -p "$root/bin" "$root/suite/bin" "$root/suite/files" "$root/dev" "$root/proc" "$root/sys"
cp "$busybox" "$root/bin/busybox"
install -m 0755 "$here/init.sh" "$root/init"
install -m 0755 "$testbin" "$root/suite/bin/test"
mkdir -p "$root/suite/modules"
for m in "$kdir"/modules/*.ko; do
	[ -f "$m" ] && install -m 0644 "$m" "$root/suite/modules/"
done
# runas is built once per source version (go is only needed when it changes).
runas="$cache/runas-$arch-$(sha256sum <"$here/runas/main.go" | cut -c1-16)"
if [ ! -x "$runas" ]; then
	(cd "$here/runas" && CGO_ENABLED=0 GOARCH=$arch go build -trimpath -o "$runas.$$" . && mv "$runas.$$" "$runas") ||
		die "build integration/vm/runas failed"
fi
install -m 0755 "$runas" "$root/suite/bin/runas"

: >"$root/suite/env"
add_bin() { # add_bin ENVNAME GUESTNAME HOSTPATH
	[ -n "$3" ] || return 0
	[ -f "$3" ] && [ -x "$3" ] || die "$1=$3 is not an executable file"
	check_static "$3"
	install -m 0755 "$3" "$root/suite/bin/$2"
	echo "$1=/suite/bin/$2" >>"$root/suite/env"
}
add_bin TOOLJAIL tooljail "${TOOLJAIL:-}"
add_bin TJHELPER tjhelper "${TJHELPER:-}"
add_bin TJSYS tjsys "${TJSYS:-}"
add_bin TOOLJAIL_TESTHOOKS tooljail-testhooks "${TOOLJAIL_TESTHOOKS:-}"
for f in ${VM_FILES:-}; do
	[ -f "$f" ] || die "VM_FILES: $f is not a file"
	cp -p "$f" "$root/suite/files/"
done
echo "TJ_VM_KERNEL_SERIES=$series" >>"$root/suite/env"
if [ -n "${VM_ENV:-}" ]; then
	while IFS= read -r l; do
		[ -z "$l" ] && continue
		[[ $l =~ ^[A-Za-z_][A-Za-z0-9_]*= ]] || die "VM_ENV: '$l' is not NAME=VALUE"
		echo "$l" >>"$root/suite/env"
	done <<<"$VM_ENV"
fi
: >"$root/suite/args"
for a in "$@"; do
	case "$a" in *$'\n'*) die "arguments must not contain newlines" ;; esac
	printf '%s\n' "$a" >>"$root/suite/args"
done
users=${VM_USERS:-root user}
for u in $users; do
	case $u in root | user | root-nouserns | user-nouserns) ;; *) die "VM_USERS: unknown '$u' (root, user, root-nouserns, user-nouserns)" ;; esac
done
echo "$users" >"$root/suite/users"

# Uncompressed newc: the kernel unpacks it faster than gzip under TCG. Owners are set to
# root here and fixed up by /init, so packing needs no privileges.
initrd="$work/initrd.cpio"
(cd "$root" && find . -mindepth 1 | LC_ALL=C sort | cpio -o -H newc -R 0:0 --quiet >"$initrd") ||
	die "cpio failed"

# ---- boot ----
log=${VM_LOG:-$cache/logs/$label.log}
mkdir -p "$(dirname "$log")"
: >"$log"
timeout_s=${VM_TIMEOUT:-900}
append="panic=-1 oops=panic loglevel=3 quiet lsm=$lsm rdinit=/init nokaslr mitigations=off"
case $arch in
amd64)
	# unknown_nmi_panic and panic_print=0x40 (every CPU's backtrace): the NMI that
	# watch_freeze sends to a frozen guest becomes a panic that says where it was stuck.
	append="console=ttyS0 $append tsc=reliable no_timer_check unknown_nmi_panic panic_print=0x40"
	machine=(-cpu max)
	;;
arm64)
	# -M virt boots the EFI-stub Image directly with -kernel (no firmware); its PL011 is
	# ttyAMA0 and PSCI turns poweroff and the panic reboot into a QEMU exit. -cpu max
	# with the QARMA pointer authentication costs much TCG time for every function
	# return; pauth-impdef keeps the feature (the kernel uses it) with a cheap hash.
	append="console=ttyAMA0 $append"
	machine=(-M virt -cpu max,pauth-impdef=on)
	;;
esac
start=$(date +%s%N)
# A frozen guest prints nothing, and only VM_TIMEOUT (25 minutes in make vm) ended it, with
# no word of where it was stuck: a 6.1 guest went silent for good 280 s into the root suite
# under a loaded host. On amd64 /init writes its uptime every 15 s to a second serial port
# ($hb); when that stops for VM_FREEZE_AFTER seconds (default 300) while QEMU runs,
# watch_freeze sends an NMI through QEMU's monitor. The kernel (unknown_nmi_panic) panics with
# every CPU's backtrace, and the boot is retried and named like any panic after ready (see
# below). A guest QEMU itself no longer runs still ends at VM_TIMEOUT. arm64 guests (one
# UART) have no heartbeat.
hb="$work/heartbeat" mon="$work/monitor"
freeze_after=${VM_FREEZE_AFTER:-300}
[[ $freeze_after =~ ^[1-9][0-9]*$ ]] || die "VM_FREEZE_AFTER must be a number of seconds, got '$freeze_after'"
extra=()
if [ "$arch" = amd64 ]; then
	mkfifo "$mon.in" "$mon.out" || die "mkfifo $mon.in $mon.out failed"
	extra=(-chardev "file,id=hb,path=$hb" -serial chardev:hb
		-chardev "pipe,id=mon,path=$mon" -mon chardev=mon,mode=readline)
fi
# watch_freeze PID: the watchdog above, for the QEMU (timeout) process PID.
watch_freeze() {
	local beat
	while sleep 5; do
		kill -0 "$1" 2>/dev/null || return 0
		# No heartbeat yet: the guest is booting (a boot that never ends is VM_TIMEOUT's).
		[ -s "$hb" ] || continue
		beat=$(stat -c %Y "$hb")
		[ $(($(date +%s) - beat)) -ge "$freeze_after" ] || continue
		echo "$prog: kernel $label: no heartbeat for ${freeze_after}s (last at guest uptime $(tr -d '\r' <"$hb" | tail -n1)s): the guest froze; sending it an NMI for its backtraces" >&2
		: >"$work/froze"
		echo nmi >"$mon.in"
		return 0
	done
}
# boot_guest: one run of the guest; the console goes to $log, qemu's status to $qrc.
boot_guest() {
	: >"$log"
	rm -f "$hb" "$work/froze"
	echo "$prog: booting $(cat "$kdir/package") ($arch, $(du -h "$initrd" | cut -f1) initramfs, TCG, ${VM_SMP:-2} CPUs, ${VM_MEM:-3072} MiB), log $log" >&2
	set +e
	if [ "${VM_QUIET:-0}" = 1 ]; then out=/dev/null; else out=/dev/stderr; fi
	# Nested KVM hangs on these machines: always TCG. -no-reboot turns the guest's panic
	# reboot (panic=-1) into a QEMU exit; a clean run ends with poweroff.
	timeout --kill-after=10 "$timeout_s" $qemu \
		-accel tcg "${machine[@]}" -m "${VM_MEM:-3072}" -smp "${VM_SMP:-2}" \
		-nodefaults -no-user-config -display none -no-reboot \
		-chardev "file,id=con,path=$log" -serial chardev:con \
		"${extra[@]}" -kernel "$kdir/vmlinuz" -initrd "$initrd" -append "$append" </dev/null >"$out" 2>&1 &
	qpid=$!
	[ "$arch" != amd64 ] || watch_freeze $qpid &
	if [ "$out" = /dev/stderr ]; then
		tail -n +1 -f --pid=$qpid "$log" >&2 &
	fi
	wait $qpid
	qrc=$?
	qpid=
	wait 2>/dev/null
	set -e
}
# A kernel that dies before /init says it is ready never ran a test: under TCG the 6.12
# kernel has panicked at boot now and then (an int3 oops while patching its own code,
# about 3 s in). That boot is retried, up to VM_BOOT_TRIES in all (default 2); the dead
# boot's console is kept as $log.bootN. A kernel panic after that is retried the same way:
# 6.12 under TCG has also died in the scheduler (dequeue_entity, "Fatal exception in
# interrupt") 2 s after the guest was ready, before a test could have done anything. A
# panic our tests cause comes back on the next boot and fails it; either way the summary
# line names the panic of every retried boot. A guest that froze (watch_freeze above) is
# retried the same way, and named with the backtrace its NMI gave.
# A guest whose clock ran far from the host's gave timing results that mean nothing: under
# TCG on a loaded host the kernel can calibrate its TSC wrong at boot (seen: 6.12's clock
# running 3.7x fast, so a 1 s CPU limit took "20 s"). A failed run with such a clock is
# run again the same way, within the same VM_BOOT_TRIES. No other failure is retried.
# skew: the guest's last console timestamp over the host's seconds for that boot, x100.
skew() {
	local g
	g=$(grep -ao '^\[ *[0-9]*\.[0-9]*\]' "$log" | tail -n1 | tr -d '[] ' | cut -d. -f1)
	[ -n "$g" ] && [ "$1" -gt 0 ] && echo $((g * 100 / $1)) || echo 100
}
# panic_site: the panic's message and, when the oops names one, the kernel function it died
# in: "Fatal exception in interrupt, RIP dequeue_entity+0x101".
panic_site() {
	local msg rip
	msg=$(tr -d '\r' <"$log" | grep -ao 'Kernel panic - not syncing: .*' | head -n1 | sed 's/^Kernel panic - not syncing: //' || true)
	rip=$(grep -aoE '(RIP: [0-9a-f]+:|pc : )[A-Za-z_][A-Za-z0-9_.]*\+0x[0-9a-f]+' "$log" | head -n1 |
		sed -E 's/^(RIP: [0-9a-f]+:|pc : )//' || true)
	echo "${msg:-no panic message}${rip:+, RIP $rip}"
}
tries=${VM_BOOT_TRIES:-2}
retried=
for try in $(seq 1 "$tries"); do
	t_boot=$(date +%s)
	boot_guest
	ratio=$(skew $(($(date +%s) - t_boot)))
	why=
	if ! grep -aq "ready at uptime" "$log"; then
		why="died before the guest was ready"
	elif [ -e "$work/froze" ]; then
		why="froze (no heartbeat for ${freeze_after}s; the NMI's panic: $(panic_site))"
	elif grep -aq 'Kernel panic' "$log"; then
		why="panicked after the guest was ready ($(panic_site))"
	elif { [ "$ratio" -gt 150 ] || [ "$ratio" -lt 66 ]; } && ! grep -aq '@@TJVM RESULT rc=0@@' "$log"; then
		why="failed with a guest clock at $((ratio / 100)).$((ratio % 100 / 10))x the host's"
	fi
	if [ -z "$why" ] || [ $qrc -eq 124 ] || [ $qrc -eq 137 ] || [ "$try" = "$tries" ]; then
		break
	fi
	cp "$log" "$log.boot$try"
	echo "$prog: kernel $label $why (console kept in $log.boot$try); booting again" >&2
	retried="${retried:+$retried; }boot $try $why"
done
elapsed=$(( ($(date +%s%N) - start) / 1000000000 ))

# ---- verdict ----
clean=$(tr -d '\r' <"$log")
result=$(grep -ao '@@TJVM RESULT rc=[0-9]*@@' <<<"$clean" | tail -n1 | sed 's/.*rc=\([0-9]*\)@@/\1/' || true)
summary=$(grep -ao '@@TJVM END [a-z-]* rc=[0-9]*@@' <<<"$clean" | sed 's/@@TJVM END \(.*\)@@/\1/' | tr '\n' ' ' | sed 's/ $//' || true)
boot=$(grep -ao "ready at uptime [0-9.]*s" <<<"$clean" | head -n1 | sed "s/ready at uptime //" || true)
took=$(grep -ao 'tjvm: suite [a-z-]* took [0-9]*s' <<<"$clean" | sed 's/tjvm: suite \(.*\) took \(.*\)/\1 \2/' | paste -sd, - | sed 's/,/, /g' || true)
reason=
if [ $qrc -eq 124 ] || [ $qrc -eq 137 ]; then
	reason="timed out after ${timeout_s}s (VM_TIMEOUT)"
	[ ! -e "$work/froze" ] || reason="$reason; it froze, and the NMI sent ${freeze_after}s after its last heartbeat did not end it"
elif [ -e "$work/froze" ]; then
	reason="the guest froze: no heartbeat for ${freeze_after}s; the NMI's panic: $(panic_site)"
elif grep -aq 'Kernel panic' <<<"$clean"; then
	reason="kernel panic ($(panic_site))"
elif grep -aq '@@TJVM INIT-FAILED' <<<"$clean"; then
	reason="guest init failed: $(grep -ao '@@TJVM INIT-FAILED[^@]*@@' <<<"$clean" | head -n1)"
elif [ -z "$result" ]; then
	reason="no result marker on the console (qemu exit $qrc): boot failure or the guest died"
fi
# failures: what a failed suite says of itself, wherever it is in the console: the tests that
# failed, a test timeout's list of the tests still running (a hung test; the goroutine dump
# after it can be thousands of lines, past the tail printed below), and what /init found
# left running (left_behind).
failures() {
	awk '/@@TJVM BEGIN /{print; next}
		/--- FAIL:/{print; next}
		/^panic: test timed out/{t=1}
		t{print; if ($0 ~ /^[[:space:]]*$/) t=0; next}
		/@@TJVM LEFT@@/{l=1}
		l{print; if ($0 ~ /@@TJVM LEFT END@@/) l=0}' <<<"$clean" | head -n 200
}
printf "%s: kernel %s: %s; guest ready after %s, total %ss%s%s\n" "$prog" "$label" \
	"${reason:-suites: ${summary:-none}}" "${boot:-?}" "$elapsed" "${took:+ (suites took: $took)}" \
	"${retried:+ (retried: $retried)}" >&2
if [ -n "$reason" ] || [ "$result" != 0 ]; then
	if [ "${VM_QUIET:-0}" = 1 ] || [ -n "$reason" ]; then
		echo "---- the suites' failures in $log ----" >&2
		failures >&2
		echo "---- last 80 lines of $log ----" >&2
		tail -n 80 <<<"$clean" >&2
		echo "----" >&2
	fi
	[ -n "$reason" ] && exit 2
	exit "$result"
fi
exit 0
