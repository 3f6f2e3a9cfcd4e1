package jail

import (
	"fmt"
	"os"
	"os/signal"
	"syscall"

	"golang.org/x/sys/unix"
)

// The init is PID 1 of the jail: uid 0 of the jail's user namespace, with
// capabilities there and none on the host. It builds the filesystem, forks
// stage 2 in a nested user namespace (where the init's mounts are locked and
// the command is uid 1000; stage2.go), reaps every orphan, forwards signals,
// and when
// the command ends reports its status and exits, which makes the kernel kill
// whatever else is left in the PID namespace.

const supervisorFD = 3 // the socket to the supervisor, in the init and stage 2

func initMain() {
	// Nothing in the jail may ptrace the init or open its /proc files.
	unix.Prctl(unix.PR_SET_DUMPABLE, 0, 0, 0, 0)
	pk, err := recvPacket(supervisorFD)
	if err != nil || len(pk.data) == 0 {
		os.Exit(125) // the supervisor is gone
	}
	var cfg initConfig
	if err := unmarshalWire(pk.data, &cfg); err != nil {
		initFail(fmt.Errorf("decode jail config: %w", err))
	}
	// Only stdio and the supervisor socket may cross into the jail, even if
	// the supervisor itself inherited descriptors without close-on-exec.
	unix.CloseRange(supervisorFD+1, ^uint(0), unix.CLOSE_RANGE_CLOEXEC)
	if cfg.DropGroups {
		if err := unix.Setgroups(nil); err != nil {
			initFail(fmt.Errorf("drop supplementary groups: %w", err))
		}
	}
	if err := buildRoot(&cfg); err != nil {
		initFail(err)
	}
	if err := unix.Sethostname([]byte(cfg.Hostname)); err != nil {
		initFail(fmt.Errorf("set hostname: %w", err))
	}
	if cfg.NetNone {
		if err := loopbackUp(); err != nil {
			initFail(err)
		}
	}
	pid, failed, err := startStage2(&cfg.Stage2)
	if err != nil {
		initFail(err)
	}
	if failed != nil {
		// Stage 2 exits with the message's code; reap reports it.
		send(supervisorFD, failed)
	}
	reap(pid)
}

func initFail(err error) {
	send(supervisorFD, &message{Type: msgSetupError, Error: err.Error(), Code: 125})
	os.Exit(125)
}

// loopbackUp brings lo up; the kernel gives it 127.0.0.1 and ::1.
func loopbackUp() error {
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("loopback: %w", err)
	}
	defer unix.Close(fd)
	ifr, err := unix.NewIfreq("lo")
	if err != nil {
		return err
	}
	if err := unix.IoctlIfreq(fd, unix.SIOCGIFFLAGS, ifr); err != nil {
		return fmt.Errorf("loopback flags: %w", err)
	}
	ifr.SetUint16(ifr.Uint16() | unix.IFF_UP)
	if err := unix.IoctlIfreq(fd, unix.SIOCSIFFLAGS, ifr); err != nil {
		return fmt.Errorf("bring loopback up: %w", err)
	}
	return nil
}

// reap waits for every child until the command (pid) ends, then reports.
func reap(pid int) {
	sigs := make(chan os.Signal, 8)
	signal.Notify(sigs, unix.SIGINT, unix.SIGTERM, unix.SIGHUP, unix.SIGQUIT, unix.SIGUSR1, unix.SIGUSR2)
	go func() {
		for s := range sigs {
			// To the command's process group, as a terminal would.
			unix.Kill(-pid, s.(syscall.Signal))
			unix.Kill(pid, s.(syscall.Signal))
		}
	}()
	for {
		var ws unix.WaitStatus
		got, err := unix.Wait4(-1, &ws, 0, nil)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			initFail(fmt.Errorf("wait for the command: %w", err))
		}
		if got != pid {
			continue // an orphan
		}
		m := message{Type: msgExit}
		switch {
		case ws.Exited():
			m.ExitCode = ws.ExitStatus()
		case ws.Signaled():
			m.Signal = int(ws.Signal())
			m.ExitCode = 128 + m.Signal
		}
		var ru unix.Rusage
		if unix.Getrusage(unix.RUSAGE_CHILDREN, &ru) == nil {
			m.Rusage = &rusage{
				UserUsec:   ru.Utime.Sec*1e6 + ru.Utime.Usec,
				SystemUsec: ru.Stime.Sec*1e6 + ru.Stime.Usec,
				MaxRSSKiB:  ru.Maxrss,
			}
		}
		send(supervisorFD, &m)
		os.Exit(0)
	}
}
