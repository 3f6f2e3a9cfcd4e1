// spawn(): a ChildProcess running the command in a jail through
// `tooljail run`, with the caller's stdio (the Python client's Popen route).

import * as child from "node:child_process";
import * as fs from "node:fs";
import { constants as osConstants } from "node:os";
import * as path from "node:path";
import { Call, JailOptions, SETUP_FAILED, chooseTransport, cliEnviron, envFlags, jailFlags, makeCall, outcome } from "./call";
import { findBinary } from "./binary";
import { JailError } from "./errors";
import type { Report } from "./report";
import { ChangeSet, Where } from "./changes";
import { readReport, reportDir } from "./transport";

export interface SpawnOptions extends JailOptions {
  /** As child_process.spawn's stdio; default "pipe" for all three. */
  stdio?: child.StdioOptions;
  /** The jail's wall-clock limit in ms (exit 124, report.status "timeout"). */
  timeout?: number;
  /** As child_process.spawn's: tooljail in a process group of its own. */
  detached?: boolean;
}

export interface JailedChildProcess extends child.ChildProcess {
  /** The jail's report once the process has exited; null when there is none
   * (tooljail was killed, or refused the run: then jailError says why). */
  readonly report: Promise<Report | null>;
  /** The run's change set once the process has exited (with the changes
   * option), with apply() and discard(); null without one. */
  readonly changes: Promise<ChangeSet | null>;
  /** Set on exit when tooljail could not run the command (exit 125). */
  jailError?: JailError;
}

function stdinIgnored(stdio: child.StdioOptions | undefined): boolean {
  if (stdio === "ignore") return true;
  return Array.isArray(stdio) && stdio[0] === "ignore";
}

/** Starts argv in a jail. The returned ChildProcess is tooljail's (pid,
 * kill(), stdin/stdout/stderr); its 'exit' and 'close' events give the
 * command's outcome: its exit code, or (null, signal) when a signal ended it;
 * 124 for the jail's timeout, 126/127 for a program the jail could not
 * execute, 125 when tooljail could not run it. A server found as run() finds
 * it is used only when stdin is "ignore" (`tooljail run --server` reads stdin
 * to its end before it sends the run). */
export function spawn(argv: string[], options: SpawnOptions = {}): JailedChildProcess {
  const call = makeCall(argv, { ...options, input: undefined }, () => process.cwd(), process.env);
  const binary = findBinary();
  if (!binary) {
    throw new JailError("tooljail.spawn: no tooljail binary (none in this package for this platform, TOOLJAIL_BIN unset, none on PATH); nothing was started", call.argv.join(" "));
  }
  let server: string | undefined;
  if (stdinIgnored(options.stdio) && call.changesDir === undefined) {
    // (changesDir names the CLI's own store: a server keeps its own.)
    try {
      const t = chooseTransport(options.socket, process.env, process.geteuid!(), fs.existsSync, () => binary);
      if (t.kind === "server") server = t.where;
    } catch {
      server = undefined;
    }
  } else if (options.socket !== undefined) {
    throw new JailError(`tooljail.spawn(socket: ${options.socket}): a server needs stdio[0] "ignore" (it reads stdin to its end before the run starts); nothing was started`, call.argv.join(" "));
  }
  const flags = [...jailFlags(call), "--workdir", call.workdir];
  if (server !== undefined) flags.push("--server", server);
  return spawnCli(binary, call, flags, call.workdir, server, options);
}

/** `tooljail run --quiet --report FILE FLAGS ENV -- ARGV` as a
 * JailedChildProcess: spawn's, and a Session's spawn (flags naming the
 * session). workdir: what the report's directory must be outside of. */
export function spawnCli(binary: string, call: Call, flags: string[], workdir: string, server: string | undefined,
  options: { stdio?: child.StdioOptions; detached?: boolean }): JailedChildProcess {
  const tmp = reportDir(workdir);
  const reportPath = path.join(tmp, "report.json");
  const args = ["run", "--quiet", "--report", reportPath, ...flags, ...envFlags(call.env), "--", ...call.argv];
  let proc: child.ChildProcess;
  try {
    proc = child.spawn(binary, args, {
      stdio: options.stdio ?? "pipe",
      env: cliEnviron(call.env, process.env, Object.keys(call.env).length === 0),
      detached: options.detached,
    });
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  const jailed = proc as JailedChildProcess;
  let settle: (r: Report | null) => void;
  const report = new Promise<Report | null>((resolve) => (settle = resolve));
  Object.defineProperty(jailed, "report", { value: report, enumerable: true });
  const where: Where = server !== undefined ? { socket: server } : { binary, changesDir: call.changesDir };
  const changes = report.then((r) => (r && r.changes && typeof r.changes === "object" ? new ChangeSet(r.changes, where) : null));
  Object.defineProperty(jailed, "changes", { value: changes, enumerable: true });
  let translated: [number | null, NodeJS.Signals | null] | undefined;
  let sent: NodeJS.Signals | number | undefined;
  const kill = proc.kill.bind(proc);
  jailed.kill = (sig?: NodeJS.Signals | number) => {
    sent = sig ?? "SIGTERM";
    return kill(sig);
  };
  const translate = (code: number | null, signal: NodeJS.Signals | null): [number | null, NodeJS.Signals | null] => {
    if (translated !== undefined) return translated;
    const raw = readReport(reportPath);
    fs.rmSync(tmp, { recursive: true, force: true });
    settle(raw);
    translated = [code, signal];
    if (raw === null) {
      if (code === SETUP_FAILED) {
        jailed.jailError = new JailError("tooljail could not run the command (exit 125, no report); it said why on the stderr it was given", call.argv.join(" "));
      } else if (code !== null && sent !== undefined && server !== undefined) {
        // A served run cancelled by a signal: tooljail exits 128+N.
        const n = typeof sent === "number" ? sent : (osConstants.signals as Record<string, number>)[sent];
        if (code === 128 + n) translated = [null, (typeof sent === "string" ? sent : signal)];
      }
      return translated;
    }
    const o = outcome(raw);
    if (o.what === "exit") translated = [o.code, o.signal];
    else if (o.what === "error") jailed.jailError = new JailError(o.reason, call.argv.join(" "), code ?? SETUP_FAILED, raw);
    return translated;
  };
  const emit = proc.emit.bind(proc);
  jailed.emit = ((event: string | symbol, ...rest: any[]) => {
    if (event === "exit" || event === "close") {
      const [code, signal] = translate(rest[0], rest[1]);
      if (event === "exit") {
        (jailed as any).exitCode = code;
        (jailed as any).signalCode = signal;
      }
      return emit(event, code, signal);
    }
    if (event === "error" && translated === undefined && proc.pid === undefined) {
      fs.rmSync(tmp, { recursive: true, force: true });
      settle(null);
    }
    return emit(event, ...rest);
  }) as typeof proc.emit;
  return jailed;
}
