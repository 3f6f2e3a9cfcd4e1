// Session: one jail a `tooljail serve` keeps across calls (docs/sessions.md).
// A session_op request starts, lists and stops it; each call is a run request
// with "session" (docs/serve.md, "Sessions"). The same decisions as the
// Python client's _session.py.

import * as fs from "node:fs";
import type * as net from "node:net";
import * as path from "node:path";
import { Call, JailOptions, Transport, chooseTransport, defaultSocket, isProfileFile, makeCall, notServed } from "./call";
import { JailError } from "./errors";
import type { Output } from "./errors";
import type { SessionInfo, SessionReport } from "./report";
import { Result, RunOptions, runCall } from "./run";
import { readProfile, requestLine } from "./transport";
import { findBinary } from "./binary";
import { JailedChildProcess, SpawnOptions, spawnCli } from "./spawn";

/** What a session's start is given: the jail (kept for the session's life)
 * and how long it lives. */
export interface SessionOptions {
  /** A profile name, or a profile file (a path with "/" or ending in ".toml"). */
  profile?: string;
  /** The workdir: bound read-write, and each call's working directory unless it names another. Default: process.cwd(). */
  cwd?: string;
  /** The session's totals, as profiles spell them ("2G", or bytes): one cgroup for all its calls and kept processes. */
  memory?: string | number;
  cpus?: string | number;
  pids?: string | number;
  /** "none", "host" or "allow". */
  network?: string;
  /** Toolchain prefixes (absolute paths) shown read-only, their bin first in PATH. Not "auto": that finds a command's, and a start has none. */
  toolchain?: string | string[];
  /** The `tooljail serve` socket. Default: TOOLJAIL_SERVER, else the default socket. */
  socket?: string;
  /** Stop the session after this many seconds without a call (or a duration as profiles spell it, "30m"). Default: the server's, 10 minutes. */
  idle?: number | string;
  /** Stop the session this many seconds after its start, a running call with it (or "8h"). Default: the server's, 8 hours. */
  maxLife?: number | string;
  /** Keep the session after this process ends or closes its connection; only stop() (or idle, maxLife, the server's end) ends it. Default false. */
  detach?: boolean;
}

/** run's options for a call in a session, but the jail's (the session's). */
export interface SessionRunOptions extends Omit<RunOptions, keyof JailOptions> {
  /** The call's working directory: an absolute path in the jail. Default: the session's workdir. */
  cwd?: string;
  /** What the command leaves running (a server started with &) stays in the session until it stops; without it, it is killed when the command ends. */
  keepRunning?: boolean;
  /** Variables added over the profile's environment, for this call only. */
  env?: Record<string, string | undefined>;
}

/** spawn's options for a call in a session, but the jail's (the session's). */
export interface SessionSpawnOptions extends Omit<SpawnOptions, keyof JailOptions> {
  /** As SessionRunOptions's. */
  cwd?: string;
  keepRunning?: boolean;
  env?: Record<string, string | undefined>;
}

/** The CLI's flags for a call in a session (`tooljail run --session`). */
export function sessionFlags(id: string, socket: string, keepRunning: boolean, cwd: string | undefined, timeout: string | undefined): string[] {
  const out = ["--session", id, "--server", socket];
  if (keepRunning) out.push("--keep-running");
  if (cwd !== undefined) out.push("--workdir", cwd);
  if (timeout !== undefined) out.push("--timeout", timeout);
  return out;
}

/** The options a session's start decides, refused on a call (JS callers may pass them). */
export const JAIL_ONLY = ["profile", "memory", "cpus", "pids", "network", "toolchain", "changes", "changesDir", "socket"] as const;

/** A session's idle or maxLife: seconds as a Go duration in whole ms (at
 * least 1ms), or a duration string as is (the server checks it). */
export function sessionDuration(what: string, value: unknown): string | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value === "string") {
    if (!value.trim()) throw new TypeError(`${what} is empty`);
    return value;
  }
  if (typeof value !== "number" || !Number.isFinite(value) || value <= 0) {
    throw new TypeError(`${what} must be a number of seconds > 0 or a duration like "30m", not ${String(value)}`);
  }
  return `${Math.max(1, Math.ceil(value * 1000))}ms`;
}

/** The toolchain option as the request's toolchains: absolute prefixes. */
export function toolchains(value: unknown): string[] {
  if (value === undefined || value === null) return [];
  const list = typeof value === "string" ? [value] : value;
  if (!Array.isArray(list)) throw new TypeError(`toolchain must be an absolute path or an array of them, not ${typeof value}`);
  return list.map((t, i) => {
    if (t === "auto") {
      throw new TypeError('toolchain "auto" finds the toolchain of a command, and a session has none when it starts: name the prefixes (absolute paths)');
    }
    if (typeof t !== "string" || !path.isAbsolute(t)) {
      throw new TypeError(`toolchain[${i}] ${JSON.stringify(t)}: want an absolute path, the prefix of a toolchain`);
    }
    return t;
  });
}

/** The session_op start request: the jail's fields of a run, nothing of a call. */
export function startRequest(call: Call, chains: string[], op: Record<string, unknown>, profileText?: string): Record<string, unknown> {
  const req: Record<string, unknown> = { session_op: op, workdir: call.workdir };
  if (profileText !== undefined) req.profile_toml = profileText;
  else if (call.profile !== undefined) req.profile = call.profile;
  if (Object.keys(call.limits).length) req.limits = { ...call.limits };
  if (call.network !== undefined) req.network = call.network;
  if (chains.length) req.toolchains = chains;
  return req;
}

/** The value a session_op answer carries under key; JailError for an error line. */
export function sessionAnswer(msg: unknown, key: "session" | "sessions"): any {
  if (msg === null || typeof msg !== "object" || Array.isArray(msg)) throw new JailError(`the tooljail server answered ${JSON.stringify(msg)}, not an object`, "");
  const m = msg as Record<string, any>;
  if ("error" in m) {
    const err = m.error ?? {};
    throw new JailError(String(err.message ?? "the server refused the request"), "", err.code ?? 125);
  }
  if (!(key in m)) throw new JailError(`the tooljail server answered ${JSON.stringify(msg).slice(0, 200)}: neither ${key} nor an error`, "");
  return m[key];
}

/** Checks a session call's options: TypeError for the jail's own, a relative cwd, a keepRunning not boolean. */
export function checkCallOptions(options: Record<string, unknown>): void {
  for (const key of JAIL_ONLY) {
    if (options[key] !== undefined) {
      throw new TypeError(`Session.run: ${key} is the session's (its start decides the jail); start a session with it instead`);
    }
  }
  const cwd = options.cwd;
  if (cwd !== undefined && (typeof cwd !== "string" || !path.isAbsolute(cwd) || cwd.includes("\0"))) {
    throw new TypeError(`Session.run: cwd ${JSON.stringify(cwd)}: a session call's working directory is an absolute path in its jail (the session's workdir is at its own path)`);
  }
  if (options.keepRunning !== undefined && typeof options.keepRunning !== "boolean") {
    throw new TypeError(`Session.run: keepRunning must be a boolean, not ${typeof options.keepRunning}`);
  }
}

/** The server a session lives in: the socket option, TOOLJAIL_SERVER or the default socket. */
function sessionServer(socket: string | undefined, what: string): string {
  let t: Transport | undefined;
  try {
    t = chooseTransport(socket, process.env, process.geteuid!(), fs.existsSync, () => undefined);
  } catch {
    t = undefined;
  }
  if (t === undefined || t.kind !== "server") {
    throw new JailError(`${what}: a session lives in a tooljail server, and none was found (no socket option, TOOLJAIL_SERVER unset, no default socket at ${defaultSocket(process.env, process.geteuid!())}): start one with \`tooljail serve\`, or pass its socket`, "");
  }
  return t.where;
}

const UNREACHABLE = "start it with `tooljail serve`, or pass another socket (socket:, TOOLJAIL_SERVER)";

/** One jail a tooljail server keeps across calls: its /tmp, HOME and the
 * processes a call kept stay between calls; each call's argv, env, cwd,
 * input, output and timeout are its own, and so is its result, run's.
 * `await Session.start(options)` starts one. Unless detach, it ends with
 * this process (or stop()). */
export class Session {
  /** The session's id (32 hex digits). */
  readonly id: string;
  /** The server's socket. */
  readonly socket: string;
  /** The session as its start answered: profile, workdir, started_at, detached, idle, max_life. */
  readonly info: SessionInfo;
  /** The final report once stopped, else null. */
  result: SessionReport | null = null;
  private conn: net.Socket | null;
  private stopping: Promise<SessionReport> | null = null;

  private constructor(socket: string, info: SessionInfo, conn: net.Socket | null) {
    this.socket = socket;
    this.info = info;
    this.id = info.id;
    this.conn = conn;
  }

  /** Starts a session in the server at options.socket (else TOOLJAIL_SERVER,
   * else the default socket): the jail of profile with cwd as its workdir
   * and the given limits. Rejects with JailError when there is no server or
   * it cannot build the jail. */
  static async start(options: SessionOptions = {}): Promise<Session> {
    const socket = sessionServer(options.socket, "Session.start");
    const call = makeCall(["(session)"], {
      profile: options.profile, cwd: options.cwd, memory: options.memory, cpus: options.cpus, pids: options.pids, network: options.network,
    }, () => process.cwd(), process.env);
    const chains = toolchains(options.toolchain);
    const op: Record<string, unknown> = { action: "start" };
    const idle = sessionDuration("idle", options.idle);
    const maxLife = sessionDuration("maxLife", options.maxLife);
    if (idle !== undefined) op.idle = idle;
    if (maxLife !== undefined) op.max_life = maxLife;
    const detach = !!options.detach;
    if (detach) op.detach = true;
    const once = async (profileText?: string) => {
      const { msg, sock } = await requestLine(socket, startRequest(call, chains, op, profileText), UNREACHABLE, !detach);
      try {
        return { info: sessionAnswer(msg, "session") as SessionInfo, sock };
      } catch (e) {
        sock?.destroy();
        throw e;
      }
    };
    let started: { info: SessionInfo; sock: net.Socket | null };
    try {
      started = await once();
    } catch (e) {
      // A profile file goes by name first, then as its text (as run's).
      if (!(e instanceof JailError && isProfileFile(call.profile) && notServed(e.message, call.profile!))) throw e;
      started = await once(readProfile(call));
    }
    const { info, sock } = started;
    if (sock !== null) {
      // The open connection is the session's life line: it must not keep
      // this process alive, and its end (the process's) ends the session.
      sock.unref();
      sock.on("error", () => {});
    }
    return new Session(socket, info, sock);
  }

  /** run(argv, options) in the session's jail: run's options (but the jail's
   * own, refused with a TypeError) and results; cwd is a path in the jail
   * (default the session's workdir); keepRunning keeps what the command
   * leaves running until the session stops. */
  run(argv: string[], options: SessionRunOptions & { encoding: "buffer" | null }): Promise<Result<Buffer>>;
  run(argv: string[], options?: SessionRunOptions): Promise<Result<string>>;
  async run(argv: string[], options: SessionRunOptions = {}): Promise<Result<Output>> {
    checkCallOptions(options as Record<string, unknown>);
    if (this.stopping !== null) throw new JailError(`session ${this.id} has stopped; start a new one`, Array.isArray(argv) ? argv.join(" ") : "");
    const call = makeCall(argv, { env: options.env, input: options.input, timeout: options.timeout }, () => "/", process.env);
    call.session = { id: this.id, keepRunning: !!options.keepRunning, cwd: options.cwd };
    return runCall(call, { kind: "server", where: this.socket }, options);
  }

  /** spawn(argv, options) in the session's jail, through `tooljail run
   * --session`: spawn's options (but the jail's own) and ChildProcess; cwd
   * and keepRunning as run's. The server reads all of stdin before the call
   * starts: with stdio[0] "pipe", end it (child.stdin.end()). */
  spawn(argv: string[], options: SessionSpawnOptions = {}): JailedChildProcess {
    checkCallOptions(options as Record<string, unknown>);
    const cmd = Array.isArray(argv) ? argv.join(" ") : "";
    if (this.stopping !== null) throw new JailError(`session ${this.id} has stopped; start a new one`, cmd);
    const call = makeCall(argv, { env: options.env, timeout: options.timeout }, () => "/", process.env);
    const binary = findBinary();
    if (!binary) throw new JailError("Session.spawn: no tooljail binary (none in this package for this platform, TOOLJAIL_BIN unset, none on PATH); nothing was started", cmd);
    const flags = sessionFlags(this.id, this.socket, !!options.keepRunning, options.cwd, call.limits.timeout);
    return spawnCli(binary, call, flags, this.info.workdir ?? process.cwd(), this.socket, options);
  }

  /** Stops the session, killing what is left in it; resolves with its final
   * report (calls, stopped_for, its cgroup's figures, the denied calls of
   * kept processes). Later calls resolve with the same. */
  stop(): Promise<SessionReport> {
    if (this.stopping === null) this.stopping = this.stopOnce();
    return this.stopping;
  }

  private async stopOnce(): Promise<SessionReport> {
    try {
      const { msg } = await requestLine(this.socket, { session_op: { action: "stop", id: this.id } }, UNREACHABLE);
      this.result = sessionAnswer(msg, "session") as SessionReport;
    } catch (e) {
      if (!(e instanceof JailError)) throw e;
      // Already gone (idle, max life, the server's end): nothing is left.
      this.result = { id: this.id, started_at: this.info.started_at, stopped_for: "ended" };
    } finally {
      this.conn?.destroy();
      this.conn = null;
    }
    return this.result;
  }
}

/** The sessions of this user (root: all) in the server at socket (else
 * TOOLJAIL_SERVER, else the default socket). */
export async function listSessions(socket?: string): Promise<SessionInfo[]> {
  const where = sessionServer(socket, "listSessions");
  const { msg } = await requestLine(where, { session_op: { action: "list" } }, UNREACHABLE);
  return sessionAnswer(msg, "sessions") as SessionInfo[];
}
