// The failure vocabulary of the init and stage 2, defined once. The C side
// numbers its steps and system calls from these lists; the supervisor
// reads the same texts through cgo (failure.go) to turn a failure record
// into the run's error. A new step is one line here.
//
// A text is the whole error, with placeholders the supervisor fills in:
//   {path}   the record's path          {index}  the record's index
//   {errno}  the errno ("end of file" when 0)
//   {cause}  the system call (TJ_CALLS) and the errno: "move_mount:
//            operation not permitted"; the errno alone when the record
//            names no call (TJ_OP_NONE: the step's own call failed)
//   {name:a|b|...}  the choice that the value of name (0, 1, ...) picks
// and the plan's words for the record's index (failure.go names them all).
#ifndef TOOLJAIL_INIT_STEPS_H
#define TOOLJAIL_INIT_STEPS_H

// X(step, text): the init's steps, in the order it takes them.
#define TJ_INIT_STEPS(X) \
	X(FDS, "set up the init's descriptors: {errno}") \
	X(SETGROUPS, "drop supplementary groups: {errno}") \
	X(SETID, "become {index:gid|uid} 0 of the jail's user namespace (its host identity): {errno}") \
	X(RECVFDS, "receive the host paths' descriptors ({index} so far): {errno}") \
	X(PRIVATE, "make mounts private: {errno}") \
	X(BASE, "mount temporary root on {path}: {cause}") \
	X(BASE_DIR, "mkdir {path}: {errno}") \
	X(PIVOT_TMP, "pivot_root to temporary root: {cause}") \
	X(OLDROOT, "open old root: {errno}") \
	X(MASKFILE, "create mask file: {errno}") \
	X(ROOTFS, "mount jail root: {cause}") \
	X(FS, "mount {path}: {cause}") \
	X(PROC_KNOB, "make /proc/{path} read-only or masked: {cause}") \
	X(DEVNODE, "host {path}: {errno} (the jail needs the host's basic device nodes)") \
	X(DEVBIND, "bind {path}: {cause}") \
	X(DEVLINK, "symlink /dev/{path}: {errno}") \
	X(DEVDIR, "mkdir /dev/{path}: {errno}") \
	X(ETC_CREATE, "create /etc/{path}: {errno}") \
	X(ETC_WRITE, "write /etc/{path}: {errno}") \
	X(DEST, "mount destination {path}: {cause}") \
	X(MOUNTPOINT, "create mount point {path}: {errno}") \
	X(BIND, "bind {source} on {dest}: {cause}") \
	X(OVERLAY, "changes: the overlay over {dest} (its upper layer in the change store): {cause}; this host refuses overlayfs in the jail's user namespace for this directory or store (`tooljail check` says why); run with --changes off, or keep the change store (--changes-dir) on ext4, xfs or btrfs") \
	X(READLINK, "read symlink {path}: {errno}") \
	X(SYMLINK, "symlink {path}: {errno}") \
	X(TMPFS, "tmpfs {path}: {cause}") \
	X(OVER, "bind {path} ({trusted}) over itself: {cause}") \
	X(MASK, "mask {path}: {cause}") \
	X(RDONLY, "make jail root read-only: {errno}") \
	X(PIVOT, "pivot_root into jail root: {cause}") \
	X(DETACH, "detach host root: {cause}") \
	X(HOSTNAME, "set hostname {hostname}: {errno}") \
	X(LOOPBACK, "bring loopback up: {cause}") \
	X(NET_LISTEN, "network allow mode: the {index:HTTP proxy|SOCKS5 proxy|DNS (UDP)|DNS (TCP)} socket on the jail's loopback: {cause}") \
	X(LL_CREATE, "landlock: create ruleset (ABI {abi}): {errno}") \
	X(LL_OPEN, "landlock: rule {path} ({access}): {cause} (the jail must only pass paths it mounted)") \
	X(LL_DIRONLY, "landlock: rule {path}: access \"{access}\" applies to directories only") \
	X(LL_RULE, "landlock: rule {path}: {errno}") \
	X(LL_PORT, "landlock: rule for TCP port {port}: {errno}") \
	X(SUBREAPER, "become the run's child subreaper (PR_SET_CHILD_SUBREAPER): {errno}") \
	X(CHILDREN, "open /proc/thread-self/children: {errno} (without namespaces tooljail finds the processes a command leaves there: it needs a mounted /proc and a kernel built with CONFIG_PROC_CHILDREN)") \
	X(STAGE2, "start stage 2: {cause}") \
	X(STAGE2_MAP, "stage 2 {index:setgroups|uid_map|gid_map}: {errno}") \
	X(WAIT, "wait for the command: {errno}") \
	X(SESSION, "session: {errno}")

// X(op, text): the system calls a step names when it makes several.
#define TJ_CALLS(X) \
	X(OPEN, "open") \
	X(STAT, "stat") \
	X(CREATE, "create") \
	X(MKDIR, "mkdir") \
	X(WRITE, "write") \
	X(FSOPEN, "fsopen") \
	X(FSCONFIG, "fsconfig") \
	X(FSMOUNT, "fsmount") \
	X(MOVE_MOUNT, "move_mount") \
	X(OPEN_TREE, "open_tree") \
	X(SETATTR, "mount_setattr") \
	X(STATX, "statx") \
	X(READLINK, "readlink") \
	X(SYMLINK, "symlink") \
	X(SOCKET, "socket") \
	X(IOCTL_GET, "get flags") \
	X(IOCTL_SET, "set flags") \
	X(CHDIR, "chdir") \
	X(BIND_PORT, "take its port") \
	X(LISTEN, "listen") \
	X(SEND, "send to the supervisor") \
	X(TOO_MANY, "more than " TJ_STR(TJ_MAX_OWNED) " tmpfs mounts")

// X(op, text): what went wrong without a failed system call. The text
// replaces the step's: each belongs to one step.
#define TJ_REASONS(X) \
	X(DEST_KIND, "mount destination {path}: exists in the jail but is not {is_dir:a file|a directory} like its source") \
	X(DEST_OWN, "mount destination {path} does not exist, and creating it would create {base_name} on the host (inside a bind mount); create it on the host first or choose another destination") \
	X(DEST_ESCAPES, "mount destination {path}: its path goes through a symlink that leaves the jail root; give the real path instead") \
	X(MASK_MISSING, "mask {path}: nothing is there in the jail, so there is nothing to hide; refusing to run, since an earlier run that could write the directory may have moved what the mask hides: check the host path, or remove the mask") \
	X(TRUSTED_GONE, "{path}, {trusted}, is gone from the jail's view: it was moved while the jail started") \
	X(TRUSTED_CHANGED, "{path}, {trusted}, was replaced while the jail started")

// X(step, text): stage 2's steps, in the order it takes them.
#define TJ_STAGE2_STEPS(X) \
	X(SYNC, "stage 2: the init did not set up its user namespace ({errno})") \
	X(SETSID, "stage 2: setsid: {errno}") \
	X(PDEATHSIG, "stage 2: parent death signal: {errno}") \
	X(IDENTITY, "become the jail's host identity ({index:drop the capability bounding set|setgroups|setresgid|setresuid}): {errno} (root without namespaces needs CAP_SETPCAP, CAP_SETUID and CAP_SETGID, and the uid and gid mapped in its user namespace)") \
	X(CAPBSET, "drop capability {index} from the bounding set: {errno}") \
	X(NNP, "set no_new_privs: {errno}") \
	X(AMBIENT, "clear ambient capabilities: {errno}") \
	X(CAPSET, "clear capabilities: {errno}") \
	X(CHDIR, "working directory {workdir}: {errno}") \
	X(RLIMIT, "set {rlimit} limit to {rlimit_value}: {errno} (it cannot be raised above the caller's hard limit)") \
	X(THP, "set PR_SET_THP_DISABLE to {thp}: {errno}") \
	X(TIMERSLACK, "set the timer slack to {timer_slack} ns: {errno}") \
	X(SIGIGN, "ignore signal {index} as the caller did: {errno}") \
	X(LANDLOCK, "landlock: restrict (ABI {abi}): {errno}") \
	X(SECCOMP, "seccomp: install (flags {seccomp_flags}): {errno}") \
	X(READY, "stage 2: the supervisor is gone ({errno})") \
	X(ACK, "stage 2: the supervisor is gone ({errno})") \
	X(CALL, "warm jail: receive the command: {errno}") \
	X(TTY, "terminal: {index:open /dev/pts/ptmx|unlock it|set its window size|open its peer|make the peer fds 0, 1 and 2|make it the controlling terminal|hand it to the supervisor}: {errno}") \
	X(FDS, "stage 2: mark descriptors close-on-exec: {errno}") \
	X(EXEC, "{command}: {errno}") \
	X(EXEC_DENIED, "{command}: {is_dir:not executable: {errno}|is a directory}") \
	X(EXEC_NOT_FOUND, "{command}: {lookup:no such file in the jail|command not found in the jail (PATH={path_var})}")

#define TJ_STR_(x) #x
#define TJ_STR(x) TJ_STR_(x)

#define TJ_ENUM_I(name, text) TJ_I_##name,
#define TJ_ENUM_OP(name, text) TJ_OP_##name,
#define TJ_ENUM_STEP(name, text) TJ_STEP_##name,

// The init's steps (tj_record.step of TJ_REC_INIT_FAIL); 0 is none.
enum { TJ_I_NONE, TJ_INIT_STEPS(TJ_ENUM_I) TJ_I_COUNT };

// The system call or reason within an init step (tj_record.op).
enum { TJ_OP_NONE, TJ_CALLS(TJ_ENUM_OP) TJ_REASONS(TJ_ENUM_OP) TJ_OP_COUNT };

// Stage 2's steps (tj_record.step of TJ_REC_STAGE2_FAIL); 0 is none.
enum { TJ_STEP_NONE, TJ_STAGE2_STEPS(TJ_ENUM_STEP) TJ_STEP_COUNT };

#endif
