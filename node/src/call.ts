// What one call asks for, and how each transport spells it. Pure functions
// (no I/O), the same decisions as the Python client's _call.py, so that both
// clients send the same requests (test/run.test.js runs each through both
// the CLI and a server).

import * as path from "node:path";
import { constants as osConstants } from "node:os";
import type { Report } from "./report";
import { ChangesMode, checkMode } from "./changes";

/** The jail's exit codes for a command that could not start (DESIGN.md 3). */
export const CANNOT_EXECUTE = 126;
export const NOT_FOUND = 127;
export const SETUP_FAILED = 125;

/** The largest profile file tooljail reads (profiles.MaxSize). */
export const MAX_PROFILE = 1 << 20;

/** The jail's own options, shared by run and spawn. */
export interface JailOptions {
  /** A profile name, or a profile file (a path with "/" or ending in ".toml"). */
  profile?: string;
  /** As profiles spell it: "256M", or a number of bytes. */
  memory?: string | number;
  /** "0.5" or 0.5. */
  cpus?: string | number;
  /** "64" or 64. */
  pids?: string | number;
  /** "none", "host" or "allow". */
  network?: string;
  /** A `tooljail serve` socket to use. Default: TOOLJAIL_SERVER, else the default socket when it exists, else the CLI. */
  socket?: string;
  /** The workdir: bound read-write and the working directory. Default: process.cwd(). */
  cwd?: string;
  /** Variables added over the profile's environment (not a replacement; process.env never reaches the command unless passed). */
  env?: Record<string, string | undefined>;
  /** What the run records of its writes to the workdir (--changes): "off",
   * "record", "review" (the workdir untouched; result.changes.apply() or
   * .discard() later) or "apply-on-success". Default: the profile's. */
  changes?: ChangesMode;
  /** The CLI's store of change sets (--changes-dir); default the user's. Not
   * taken with a server, which keeps its clients' sets in its own. */
  changesDir?: string;
}

/** One run, checked. stdin: undefined is /dev/null. */
export interface Call {
  argv: string[];
  workdir: string;
  env: Record<string, string>;
  stdin?: Buffer;
  profile?: string;
  limits: Record<string, string>;
  network?: string;
  /** The jail's wall-clock limit in ms; undefined: the profile's. */
  timeoutMs?: number;
  /** The PATH a served profile's toolchains = ["auto"] looks the program up in. */
  path?: string;
  changes?: ChangesMode;
  changesDir?: string;
  /** A call in a server's session: the jail is the session's (workdir,
   * profile, limits but the timeout); cwd is a path in it. */
  session?: SessionCallSpec;
}

export interface SessionCallSpec {
  id: string;
  keepRunning: boolean;
  /** Absolute, in the jail; undefined: the session's workdir. */
  cwd?: string;
}

function text(what: string, value: unknown): string {
  if (typeof value !== "string") {
    throw new TypeError(`${what} must be a string, not ${value === null ? "null" : typeof value}`);
  }
  if (value.includes("\0")) throw new TypeError(`${what} contains a NUL byte`);
  return value;
}

function name(what: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || value === "") {
    throw new TypeError(`${what} must be a non-empty string, not ${JSON.stringify(value)}`);
  }
  return value;
}

/** A limit as profiles spell it: a string as is, a number as a plain number. */
export function limit(what: string, value: unknown): string {
  if (typeof value === "string") {
    if (!value.trim()) throw new TypeError(`${what} is empty`);
    return value;
  }
  if (typeof value !== "number" || !Number.isFinite(value)) {
    throw new TypeError(`${what} must be a string like the profile's or a finite number, not ${String(value)}`);
  }
  if (value < 0) throw new RangeError(`${what} must be >= 0, not ${value}`);
  if (what !== "cpus" && !Number.isInteger(value)) {
    throw new TypeError(`${what} must be an integer or a string, not ${value}`);
  }
  return String(value);
}

/** execFile's timeout (ms) as a Go duration for the jail; undefined for none.
 * 0 is no timeout, as execFile's; fractions round up (the jail reads 0 as none). */
export function timeoutDuration(ms: number | undefined): string | undefined {
  if (ms === undefined || ms === 0) return undefined;
  if (typeof ms !== "number" || !Number.isFinite(ms) || ms < 0) {
    throw new RangeError(`timeout must be a number of milliseconds >= 0, not ${String(ms)}`);
  }
  return `${Math.max(1, Math.ceil(ms))}ms`;
}

function commandEnv(env: unknown): Record<string, string> {
  if (env === undefined || env === null) return {};
  if (typeof env !== "object") throw new TypeError(`env must be an object of strings, not ${typeof env}`);
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(env as Record<string, unknown>)) {
    // process.env-like objects may hold undefined: as child_process, skipped.
    if (v === undefined) continue;
    text("env key", k);
    if (k === "" || k.includes("=")) throw new TypeError(`env key ${JSON.stringify(k)}: a variable name is non-empty and has no '='`);
    out[k] = text(`env[${JSON.stringify(k)}]`, String(v));
  }
  return out;
}

export interface CallOptions extends JailOptions {
  input?: string | Buffer | Uint8Array;
  timeout?: number;
}

/** Checks the caller's arguments and returns a Call; TypeError or RangeError
 * saying what to pass instead. */
export function makeCall(argv: unknown, o: CallOptions, getcwd: () => string, environ: NodeJS.ProcessEnv): Call {
  if (!Array.isArray(argv)) {
    throw new TypeError("argv must be an array of strings: the program and its arguments (no shell: pass [\"sh\", \"-c\", script] for one)");
  }
  if (argv.length === 0) throw new TypeError("argv is empty: name the program to run");
  const args = argv.map((a, i) => text(`argv[${i}]`, a));
  const workdir = path.resolve(o.cwd !== undefined ? text("cwd", o.cwd) : getcwd());
  const limits: Record<string, string> = {};
  for (const key of ["memory", "cpus", "pids"] as const) {
    if (o[key] !== undefined && o[key] !== null) limits[key] = limit(key, o[key]);
  }
  const timeout = timeoutDuration(o.timeout);
  if (timeout !== undefined) limits.timeout = timeout;
  let stdin: Buffer | undefined;
  if (o.input !== undefined && o.input !== null) {
    if (typeof o.input === "string") stdin = Buffer.from(o.input, "utf8");
    else if (o.input instanceof Uint8Array) stdin = Buffer.from(o.input.buffer, o.input.byteOffset, o.input.byteLength);
    else throw new TypeError("input must be a string, a Buffer or a Uint8Array");
  }
  const env = commandEnv(o.env);
  return {
    argv: args,
    workdir,
    env,
    stdin,
    profile: name("profile", o.profile),
    limits,
    network: name("network", o.network),
    timeoutMs: timeout === undefined ? undefined : o.timeout,
    // As the CLI finds it: the command's PATH when env gives one, else ours.
    path: env.PATH ?? environ.PATH ?? "",
    changes: checkMode(o.changes),
    changesDir: o.changesDir === undefined || o.changesDir === null ? undefined : path.resolve(text("changesDir", o.changesDir)),
  };
}

/** The CLI's jail flags for a call (after `run --quiet --report FILE`). */
export function jailFlags(call: Call): string[] {
  const out: string[] = [];
  if (call.profile !== undefined) out.push("--profile", call.profile);
  for (const key of ["memory", "cpus", "pids", "timeout"]) {
    if (call.limits[key] !== undefined) out.push("--" + key, call.limits[key]);
  }
  if (call.network !== undefined) out.push("--net", call.network);
  if (call.changes !== undefined) out.push("--changes", call.changes);
  if (call.changesDir !== undefined) out.push("--changes-dir", call.changesDir);
  return out;
}

/** The CLI's command line for a call: the command's output on the CLI's
 * stdout and stderr as it comes, the report in the file report. */
export function cliArgv(call: Call, report: string): string[] {
  return ["run", "--quiet", "--report", report, ...jailFlags(call), "--workdir", call.workdir,
    ...envFlags(call.env), "--", ...call.argv];
}

/** Variables the tooljail process reads for itself: a value the command is
 * given for one of them cannot also be the process's, so it goes in argv. */
export const TOOLJAIL_OWN: ReadonlySet<string> = new Set([
  "HOME", "XDG_CACHE_HOME", "XDG_RUNTIME_DIR", "TOOLJAIL_AUDIT_LOG", "TOOLJAIL_CACHE_DIR",
  "TOOLJAIL_SERVER", "TOOLJAIL_TEST_HOSTS", "KUBERNETES_SERVICE_HOST",
]);

/** `--env NAME` for each variable (its value in tooljail's environment, never
 * in argv, which every user of the host can read in /proc/PID/cmdline);
 * `--env NAME=VALUE` only for TOOLJAIL_OWN names. */
export function envFlags(env: Record<string, string>): string[] {
  const out: string[] = [];
  for (const [k, v] of Object.entries(env)) out.push("--env", TOOLJAIL_OWN.has(k) ? `${k}=${v}` : k);
  return out;
}

/** The tooljail process's environment: environ (inherit) or only its
 * TOOLJAIL_OWN variables, TOOLJAIL_SERVER dropped (the caller chose the
 * transport), then env's values but TOOLJAIL_OWN ones; PATH kept for tooljail. */
export function cliEnviron(env: Record<string, string>, environ: NodeJS.ProcessEnv, inherit = true): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(environ)) {
    if (v !== undefined && k !== "TOOLJAIL_SERVER" && (inherit || TOOLJAIL_OWN.has(k))) out[k] = v;
  }
  for (const [k, v] of Object.entries(env)) if (!TOOLJAIL_OWN.has(k)) out[k] = v;
  if (out.PATH === undefined && environ.PATH !== undefined) out.PATH = environ.PATH;
  return out;
}

/** The request object of the wire protocol (docs/serve.md); output always streamed. */
export function serverRequest(call: Call, profileText?: string): Record<string, unknown> {
  if (call.session !== undefined) return sessionRequest(call, call.session);
  const req: Record<string, unknown> = { argv: call.argv, workdir: call.workdir, stream: true };
  if (Object.keys(call.env).length) req.env = call.env;
  if (call.stdin !== undefined) req.stdin = call.stdin.toString("base64");
  if (profileText !== undefined) req.profile_toml = profileText;
  else if (call.profile !== undefined) req.profile = call.profile;
  if (Object.keys(call.limits).length) req.limits = { ...call.limits };
  if (call.network !== undefined) req.network = call.network;
  if (call.changes !== undefined) req.changes = call.changes;
  if (call.path) req.path = call.path;
  return req;
}

/** A session call's request: the session's start decided the jail, so only
 * the call's own fields go (the server refuses the others). */
function sessionRequest(call: Call, session: SessionCallSpec): Record<string, unknown> {
  const req: Record<string, unknown> = { argv: call.argv, stream: true, session: session.id };
  if (session.cwd !== undefined) req.cwd = session.cwd;
  if (session.keepRunning) req.keep_running = true;
  if (Object.keys(call.env).length) req.env = call.env;
  if (call.stdin !== undefined) req.stdin = call.stdin.toString("base64");
  if (call.limits.timeout !== undefined) req.limits = { timeout: call.limits.timeout };
  return req;
}

/** A profile given as a file, not a shipped or served name (as the CLI tells). */
export function isProfileFile(profile: string | undefined): boolean {
  return profile !== undefined && (profile.includes("/") || profile.endsWith(".toml"));
}

/** Whether a server's refusal says it serves no profile of that name. */
export function notServed(message: string, profile: string): boolean {
  return message.startsWith(`profile ${JSON.stringify(profile)}: not served here`);
}

/** The server's default socket path (the protocol's rule). */
export function defaultSocket(environ: NodeJS.ProcessEnv, uid: number): string {
  const runtime = environ.XDG_RUNTIME_DIR;
  if (runtime) return path.join(runtime, "tooljail.sock");
  if (uid === 0) return "/run/tooljail/sock";
  return `/tmp/tooljail-${uid}/sock`;
}

export type Transport = { kind: "server"; where: string } | { kind: "cli"; where: string };

/** An explicit socket, then TOOLJAIL_SERVER, then the default socket if it
 * exists, then the CLI (findBinary). Error when there is neither. */
export function chooseTransport(socket: string | undefined, environ: NodeJS.ProcessEnv, uid: number,
  exists: (p: string) => boolean, findBinary: () => string | undefined): Transport {
  if (socket !== undefined && socket !== null) return { kind: "server", where: text("socket", socket) };
  if (environ.TOOLJAIL_SERVER) return { kind: "server", where: environ.TOOLJAIL_SERVER };
  const sock = defaultSocket(environ, uid);
  if (exists(sock)) return { kind: "server", where: sock };
  const binary = findBinary();
  if (!binary) {
    throw new Error(`no tooljail server (no socket at ${sock}, TOOLJAIL_SERVER unset) and no tooljail ` +
      "binary (none in this package for this platform, TOOLJAIL_BIN unset, none on PATH): install " +
      "tooljail, set TOOLJAIL_BIN, or start `tooljail serve`");
  }
  return { kind: "cli", where: binary };
}

export type Outcome =
  | { what: "exit"; code: number | null; signal: NodeJS.Signals | null }
  | { what: "timeout" }
  | { what: "exec"; errno: string }
  | { what: "error"; reason: string };

/** What a report means to the caller. A signal is (null, its name), as
 * child_process gives it; 126/127 an exec error with the errno execve gave. */
export function outcome(report: Report): Outcome {
  const { status, exit_code: code } = report;
  if (status === "timeout") return { what: "timeout" };
  if (status === "setup_error" && (code === CANNOT_EXECUTE || code === NOT_FOUND)) {
    return { what: "exec", errno: execErrno(code, report.reason ?? "") };
  }
  if (status === "exited" && Number.isInteger(code)) return { what: "exit", code, signal: null };
  if ((status === "signaled" || status === "memory_limit" || status === "violation") && Number.isInteger(code)) {
    const sig = report.signal ?? signalName(code - 128);
    if (sig) return { what: "exit", code: null, signal: sig as NodeJS.Signals };
    return { what: "exit", code, signal: null };
  }
  return { what: "error", reason: report.reason || `the jail ended with status ${JSON.stringify(status)} (exit ${code})` };
}

function signalName(n: number): string | undefined {
  for (const [k, v] of Object.entries(osConstants.signals)) if (v === n) return k;
  return undefined;
}

/** The errors execve gives besides EACCES, as the jail's reason ends with them. */
const EXEC_ERRNOS: ReadonlyArray<[string, string]> = [
  ["exec format error", "ENOEXEC"],
  ["argument list too long", "E2BIG"],
  ["text file busy", "ETXTBSY"],
  ["too many levels of symbolic links", "ELOOP"],
  ["file name too long", "ENAMETOOLONG"],
];

/** The errno code child_process would give for the jail's 126 or 127. */
export function execErrno(code: number, reason: string): string {
  if (code === NOT_FOUND) return "ENOENT";
  for (const [words, errno] of EXEC_ERRNOS) if (reason.endsWith(words)) return errno;
  return "EACCES";
}
