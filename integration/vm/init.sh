#!/bin/busybox sh
# /init of the integration/vm guest (packed by run.sh). Two stages:
#  1. in the initramfs: copy everything to a tmpfs and switch_root into it, because
#     pivot_root(2) (which the jail uses) fails when the root is the initramfs itself;
#  2. in the tmpfs root: mount a pure cgroup v2 hierarchy with every controller, set up
#     users and a delegated subtree, run the suite as root and as uid 65534, print the
#     results between markers on the console and power off.
# Markers (parsed by run.sh): @@TJVM BEGIN <who>@@, @@TJVM END <who> rc=N@@, @@TJVM RESULT rc=N@@.

B=/bin/busybox

if [ ! -e /.stage2 ]; then
	$B mkdir -p /newroot
	$B mount -t tmpfs -o mode=0755 tmpfs /newroot || exec $B echo "@@TJVM INIT-FAILED tmpfs@@"
	$B mkdir -p /newroot/dev
	$B mount -t devtmpfs devtmpfs /newroot/dev
	exec </newroot/dev/console >/newroot/dev/console 2>&1
	for f in /* /.[!.]*; do
		case "$f" in /newroot | /dev | /proc | /sys | '/.[!.]*') continue ;; esac
		$B cp -a "$f" /newroot/ || {
			echo "@@TJVM INIT-FAILED copy $f@@"
			$B poweroff -f
		}
	done
	: >/newroot/.stage2
	exec $B switch_root /newroot /init
fi

# ---- stage 2: tmpfs root ----
export PATH=/usr/sbin:/usr/bin:/sbin:/bin
fatal() {
	echo "@@TJVM INIT-FAILED $*@@"
	echo "@@TJVM RESULT rc=2@@"
	$B sync
	$B poweroff -f
	echo o >/proc/sysrq-trigger
	exit 1
}
$B mkdir -p /sbin /usr/bin /usr/sbin /usr/lib /usr/lib64 /proc /sys /tmp /root /home /etc /run /var/tmp
$B --install -s || fatal "busybox --install"
ln -s usr/lib /lib
ln -s usr/lib64 /lib64

mount -t proc -o nosuid,nodev,noexec proc /proc || fatal "mount proc"
mount -t sysfs -o nosuid,nodev,noexec sysfs /sys || fatal "mount sysfs"
mount -t securityfs -o nosuid,nodev,noexec securityfs /sys/kernel/security || fatal "mount securityfs"
# Same options as systemd: nsdelegate makes cgroup namespaces delegation boundaries.
mount -t cgroup2 -o nosuid,nodev,noexec,nsdelegate cgroup2 /sys/fs/cgroup || fatal "mount cgroup2"
mkdir -p /dev/pts /dev/shm
mount -t devpts -o newinstance,gid=5,mode=0620,ptmxmode=0666 devpts /dev/pts || fatal "mount devpts"
ln -sf pts/ptmx /dev/ptmx
mount -t tmpfs -o mode=1777,nosuid,nodev shm /dev/shm || fatal "mount /dev/shm"
mount -t tmpfs -o mode=1777,nosuid,nodev tmp /tmp || fatal "mount /tmp"
chmod 1777 /var/tmp
ln -sf /proc/self/fd /dev/fd
ln -sf /proc/self/fd/0 /dev/stdin
ln -sf /proc/self/fd/1 /dev/stdout
ln -sf /proc/self/fd/2 /dev/stderr

# overlayfs and loop are modules of the cloud kernels (run.sh ships them). /var/tmp is an
# ext2 scratch file system on a loop device: a file system with user.* xattrs, which
# tmpfs has only from Linux 6.6, for --changes' change stores (TJ_CHANGES_BASE).
for m in /suite/modules/*.ko; do
	[ -f "$m" ] && { insmod "$m" || fatal "insmod $m"; }
done
if [ -f /suite/modules/loop.ko ]; then
	loopdev=$(losetup -f) && truncate -s 4G /scratch.img && losetup "$loopdev" /scratch.img &&
		mke2fs -q "$loopdev" >/dev/null && mount -o nosuid,nodev "$loopdev" /var/tmp ||
		fatal "ext2 scratch on /var/tmp"
	chmod 1777 /var/tmp
	echo "TJ_CHANGES_BASE=/var/tmp" >>/suite/env
fi

# Users: root, and nobody (65534) as the unprivileged suite user.
cat >/etc/passwd <<'EOF'
root:x:0:0:root:/root:/bin/sh
nobody:x:65534:65534:nobody:/home/nobody:/bin/sh
EOF
cat >/etc/group <<'EOF'
root:x:0:
tty:x:5:
nogroup:x:65534:
EOF
cat >/etc/hosts <<'EOF'
127.0.0.1	localhost tjvm
::1	localhost ip6-localhost ip6-loopback
EOF
echo 'hosts: files' >/etc/nsswitch.conf
echo tjvm >/etc/hostname
hostname tjvm
mkdir -p /home/nobody && chown 65534:65534 /home/nobody
chmod 0700 /root
ip link set lo up || fatal "lo up"

# cgroup v2, laid out like systemd's user@.service with Delegate=yes: every controller is
# enabled at the root; init lives in init.scope (the root cgroup holds only kernel
# threads); each suite gets a delegated cgroup suite-WHO with every controller enabled
# for its children, and the suite process starts in its leaf suite-WHO/test. The suite
# may create cgroups next to test (one per tooljail run, as systemd-run --scope would)
# and move its own processes between them. For uid 65534 the delegated cgroup and its
# cgroup.procs, cgroup.subtree_control and cgroup.threads are chowned, never its
# resource files (memory.max of suite-user stays root's: the delegate cannot raise
# its own limits); everything inside test/ is the user's.
CG=/sys/fs/cgroup
enable_all() { # enable_all CGROUP: every controller it has, for its children
	for c in $(cat "$1/cgroup.controllers"); do
		echo "+$c" >"$1/cgroup.subtree_control" || fatal "enable controller $c in $1"
	done
}
enable_all $CG
mkdir $CG/init.scope || fatal "mkdir init.scope"
echo $$ >$CG/init.scope/cgroup.procs || fatal "move init into init.scope"
for who in root user; do
	mkdir $CG/suite-$who && enable_all $CG/suite-$who && mkdir $CG/suite-$who/test ||
		fatal "create cgroup suite-$who"
done
chown 65534:65534 $CG/suite-user $CG/suite-user/cgroup.procs \
	$CG/suite-user/cgroup.subtree_control $CG/suite-user/cgroup.threads || fatal "delegate suite-user"
chown -R 65534:65534 $CG/suite-user/test || fatal "delegate suite-user/test"
# One empty group with a CPU quota, for the guest's life. The first quota set anywhere
# turns on the kernel's CFS bandwidth code by patching its instructions (a static key),
# and the last one removed turns it off again: every run with a CPU cap did both. Under
# QEMU's multi-threaded TCG, patching code that the other vCPU is running sometimes
# leaves it a stale int3: 6.12 guests died of "Oops: int3" in pick_task_fair or
# enqueue_task_fair, seconds after the first run with a CPU cap. With the key on from
# here, a run's quota only counts up and down.
if grep -qw cpu $CG/cgroup.subtree_control; then
	mkdir $CG/tjvm-bandwidth && echo "100000 100000" >$CG/tjvm-bandwidth/cpu.max ||
		fatal "set a CPU quota on tjvm-bandwidth"
fi

echo "tjvm: kernel $(uname -r); cgroup controllers: $(cat $CG/cgroup.subtree_control); ready at uptime $(cut -d" " -f1 /proc/uptime)s"

# The heartbeat run.sh watches (amd64: its second serial port, ttyS1): the uptime every 15 s.
# Its silence while QEMU runs means the guest froze (see watch_freeze in run.sh).
if [ -c /dev/ttyS1 ] && stty -F /dev/ttyS1 raw 2>/dev/null; then
	(while cut -d" " -f1 /proc/uptime >/dev/ttyS1; do sleep 15; done) </dev/null >/dev/null 2>&1 &
fi

# left_behind: every process still running once a suite has ended, but /init's own (in
# init.scope) and the kernel's threads, with its cgroup, state, where it sleeps in the
# kernel and its kernel stack. After a test that hung (the suite's -test.timeout) it shows
# what the hung run was waiting for; after a suite that passed it should print nothing.
left_behind() {
	first=1
	for d in /proc/[0-9]*; do
		p=${d#/proc/}
		cg=$(cut -d: -f3 $d/cgroup 2>/dev/null) || continue
		[ -n "$cg" ] && [ "$cg" != /init.scope ] && [ -n "$(readlink $d/exe 2>/dev/null)" ] || continue
		[ -z "$first" ] || echo "@@TJVM LEFT@@"
		first=
		echo "pid $p ppid $(cut -d' ' -f4 $d/stat 2>/dev/null) state $(cut -d' ' -f3 $d/stat 2>/dev/null)" \
			"cgroup $cg wchan $(cat $d/wchan 2>/dev/null) cmd $(tr '\0' ' ' <$d/cmdline 2>/dev/null | cut -c1-120)"
		head -n 8 $d/stack 2>/dev/null | sed 's/^/    /'
	done
	[ -n "$first" ] || echo "@@TJVM LEFT END@@"
}

# run_suite WHO UID GID HOME NAME: the test binary with /suite/env and /suite/args.
# WHO-nouserns runs as WHO, in WHO's cgroup, after user.max_user_namespaces=0, only the
# tests of the mode without namespaces (a later -test.run wins), with TJ_VM_NOUSERNS=1.
run_suite() {
	who=$1 uid=$2 gid=$3 home=$4 name=$5
	as=${who%-nouserns}
	set --
	while IFS= read -r l; do set -- "$@" "$l"; done </suite/env
	[ "$as" = "$who" ] || set -- "$@" "TJ_VM_NOUSERNS=1"
	set -- "$@" "PATH=$PATH" "HOME=$home" "TMPDIR=/tmp" "USER=$name" "LOGNAME=$name" \
		"TJ_VM=1" "TJ_VM_USER=$as" "TJ_VM_CGROUP=$CG/suite-$as" \
		/suite/bin/runas -cgroup "$CG/suite-$as/test" -uid "$uid" -gid "$gid" -dir /suite -- \
		/suite/bin/test
	while IFS= read -r a; do set -- "$@" "$a"; done </suite/args
	if [ "$as" != "$who" ]; then
		echo 0 >/proc/sys/user/max_user_namespaces || fatal "user.max_user_namespaces=0"
		set -- "$@" "-test.run=^TestNoNamespaces"
	fi
	t0=$(cut -d. -f1 /proc/uptime)
	echo "@@TJVM BEGIN $who@@"
	env -i "$@" </dev/null
	rc=$?
	echo "@@TJVM END $who rc=$rc@@"
	left_behind
	echo "tjvm: suite $who took $(($(cut -d. -f1 /proc/uptime) - t0))s"
	return $rc
}

result=0
for who in $(cat /suite/users); do
	case $who in
	root | root-nouserns) run_suite $who 0 0 /root root ;;
	user | user-nouserns) run_suite $who 65534 65534 /home/nobody nobody ;;
	*) fatal "unknown suite user $who" ;;
	esac
	rc=$?
	[ $result -ne 0 ] || result=$rc
done
echo "@@TJVM RESULT rc=$result@@"
sync
poweroff -f
echo o >/proc/sysrq-trigger
