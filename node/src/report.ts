// The jail's report, schema tooljail.report/v1 (docs/report.md), as the Go
// struct report.Result (jail.Result) writes it. Fields are only ever added
// within v1; a figure the host could not measure is absent (never a made-up
// zero), so those fields are optional. test/types.test.js checks these names
// against a real report, so this type cannot drift.

export type Status =
  | "exited"
  | "signaled"
  | "timeout"
  | "memory_limit"
  | "violation"
  | "setup_error"
  | "aborted"
  | "cancelled"
  | "refused";

export interface Stream {
  /** Everything the command wrote to the stream. */
  bytes: number;
  /** Some of it was over the output limit and dropped. */
  truncated: boolean;
  /** The captured output as text (only with `tooljail run --json`; never in a streamed run's report). */
  text?: string;
  /** The captured output as base64, in place of text when it is not UTF-8. */
  base64?: string;
  /** On stderr when stderr was merged into stdout. */
  merged?: boolean;
}

export interface Violation {
  kind: string;
  syscall?: string;
  host?: string;
  port?: number;
  reason?: string;
  args?: string[];
  path?: string;
  access?: string[];
  pid?: number;
  jail_pid?: number;
  count: number;
  action: string;
}

export interface EnvDrop {
  name: string;
  reason: string;
}

export interface ReportLimits {
  memory_bytes?: number;
  cpus?: number;
  pids?: number;
  timeout_ms?: number;
  cpu_time_ms?: number;
  nofile?: number;
  fsize_bytes?: number;
  output_limit_bytes?: number;
  core_bytes: number;
  max_violations?: number;
  net_connections?: number;
  net_bytes?: number;
}

export interface Namespaces {
  user: boolean;
  mount: boolean;
  pid: boolean;
  net: boolean;
  ipc: boolean;
  uts: boolean;
  cgroup: boolean;
}

export interface CacheBind {
  name: string;
  path: string;
  host_path: string;
}

export interface Toolchain {
  kind: string;
  prefixes: string[];
  bin: string[];
  env?: string[];
  from: string;
}

export interface NetworkEnforcement {
  mode: string;
  http_proxy: string;
  socks5_proxy: string;
  dns: string;
  route: string;
  landlock_connect: string;
}

export interface Enforcement {
  mode?: string;
  namespaces: Namespaces;
  landlock_abi: number;
  landlock_rights?: string[];
  landlock_net_rights?: string[];
  landlock_scopes?: string[];
  landlock_denials?: string;
  seccomp: string;
  cgroup: string;
  caps?: Record<string, boolean>;
  no_new_privs: boolean;
  host_uid?: number;
  host_gid?: number;
  idmapped?: string[];
  protected?: string[];
  root?: string;
  caches?: CacheBind[];
  unix_sockets: string;
  toolchains?: Toolchain[];
  degraded: string[];
  network?: NetworkEnforcement;
}

export interface NetworkEntry {
  proto: string;
  host: string;
  port?: number;
  dns_type?: string;
  address?: string;
  bytes_up: number;
  bytes_down: number;
  decision: string;
  cut?: string;
  count: number;
}

export interface FullMount {
  path: string;
  size_bytes: number;
  peak_used_bytes: number;
  full: string;
  raise_with?: string;
}

/** One changed path of a change set (changes.Entry). */
export interface ChangeEntry {
  /** The writable bind's destination in the jail ("/work", or the workdir's path). */
  bind: string;
  /** Relative to the bind's root, "/"-separated. */
  path: string;
  kind: "created" | "modified" | "deleted" | "type_changed" | "mode_changed" | "symlink";
  type: "file" | "dir" | "symlink" | "fifo" | "socket" | "device";
  size: number;
  sha256?: string;
  mode?: string;
  target?: string;
  link?: string;
  protected?: boolean;
  skipped?: string;
}

/** A change set's entries counted by kind (changes.Totals). */
export interface ChangeTotals {
  entries: number;
  created: number;
  modified: number;
  deleted: number;
  type_changed: number;
  mode_changed: number;
  symlink: number;
  bytes: number;
}

/** A path whose host state is not what the set's baseline says (changes.Conflict). */
export interface ChangeConflict {
  bind: string;
  path: string;
  why: string;
}

/** The report's changes block (changes.Report), present when the run's mode is not off. */
export interface ChangesReport {
  mode: string;
  recorded: boolean;
  reason?: string;
  id?: string;
  state: string;
  entries: ChangeEntry[];
  totals: ChangeTotals;
  truncated?: boolean;
  conflicts?: ChangeConflict[];
  error?: string;
}

/** A session call's place in its session (jail.SessionCall). */
export interface SessionCall {
  id: string;
  /** 1 for the session's first call. */
  call: number;
  keep_running?: boolean;
}

/** A session as a start or a list answers it (serve.SessionInfo, docs/serve.md). */
export interface SessionInfo {
  id: string;
  uid: number;
  profile: string;
  workdir?: string;
  started_at: string;
  detached: boolean;
  /** As Go prints durations: "10m0s". */
  idle: string;
  max_life: string;
}

/** A stopped session's final report (jail.SessionResult), the audit line's
 * session: its life, calls, why it stopped, its cgroup's figures, and the
 * denied calls its kept processes made after their calls. A session that
 * had already ended when stop() asked (idle, max life, its server's end)
 * has only id, started_at and stopped_for "ended": the server no longer
 * knows it (its audit log has its report). */
export interface SessionReport {
  id: string;
  started_at: string;
  wall_time_ms?: number;
  calls?: number;
  /** "stop", "idle", "max_life" or "ended". */
  stopped_for: string;
  killed_running_call?: boolean;
  memory_peak_bytes?: number;
  oom_kills?: number;
  pids_peak?: number;
  pids_limit_hits?: number;
  cpu_user_ms?: number;
  cpu_system_ms?: number;
  violations?: Violation[];
}

export interface Report {
  schema: string;
  version: string;
  id: string;
  command: string[];
  workdir: string;
  profile?: string;
  started_at: string;
  status: Status;
  exit_code: number;
  signal?: string;
  reason?: string;
  wall_time_ms: number;
  cpu_user_ms?: number;
  cpu_system_ms?: number;
  max_rss_bytes?: number;
  memory_peak_bytes?: number;
  oom_kills?: number;
  pids_peak?: number;
  pids_limit_hits?: number;
  cpu_throttled_ms?: number;
  /** A call's place in its session (a Session's run), absent for a one-off run. */
  session?: SessionCall;
  stdout: Stream;
  stderr: Stream;
  violations: Violation[];
  env_dropped?: EnvDrop[];
  limits: ReportLimits;
  enforcement: Enforcement;
  network?: NetworkEntry[];
  network_limit_hits?: Record<string, number>;
  killed_leftover_processes?: number;
  full_mounts?: FullMount[];
  changes?: ChangesReport;
}
