// spawn(): a ChildProcess running the command in a jail through
// `tooljail run`, with the caller's stdio (the Python client's Popen route).

import * as child from "node:child_process";
import * as fs from "node:fs";
import { constants as osConstants } from "node:os";
import * as path from "node:path";
import { Call, JailOptions, SETUP_FAILED, chooseTransport, cliEnviron, envFlags, jailFlags, makeCall, outcome } from "./call";
import { findBinary } from "./binary";
import { ExecError, JailError } from "./errors";
import type { Readable, Stream } from "node:stream";
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

/** options.stdio as an array of at least the 3 entries child_process
 * reads (undefined there is "pipe", as in child_process). */
function stdioArray(stdio: child.StdioOptions | undefined): Array<child.IOType | "ipc" | number | null | undefined | Stream> {
  const out = Array.isArray(stdio) ? [...stdio] : [stdio ?? "pipe", stdio ?? "pipe", stdio ?? "pipe"];
  while (out.length < 3) out.push(undefined);
  return out;
}

function stdinIgnored(stdio: child.StdioOptions | undefined): boolean {
  return stdioArray(stdio)[0] === "ignore";
}

/** Starts argv in a jail. The returned ChildProcess is tooljail's (pid,
 * kill(), stdin/stdout/stderr); 'spawn' comes once the command has been
 * exec'd in the jail, and its 'exit' and 'close' events give the command's
 * outcome: its exit code, or (null, signal) when a signal ended it; 124 for
 * the jail's timeout, 125 when tooljail could not run it. A program the jail
 * cannot find or execute is child_process's: no 'spawn', an 'error' (ENOENT,
 * EACCES, ...; an ExecError), no 'exit', 'close' with (-errno, null). A
 * server found as run() finds it is used only when stdin is "ignore"
 * (`tooljail run --server` reads stdin to its end before it sends the run). */
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
  // --exec-fd (docs/cli.md): tooljail writes "exec\n" on a pipe of ours once
  // the command has been exec'd, and closes it without it when the command
  // never ran, so that 'spawn' and a program not found are child_process's.
  // Not for a served call that reads stdin: the server gets the run only once
  // stdin has ended, and a caller may wait for 'spawn' before ending it.
  const stdio = stdioArray(options.stdio);
  const execFd = server === undefined || stdio[0] === "ignore" ? stdio.length : undefined;
  const args = ["run", "--quiet", "--report", reportPath, ...(execFd !== undefined ? ["--exec-fd", String(execFd)] : []),
    ...flags, ...envFlags(call.env), "--", ...call.argv];
  let proc: child.ChildProcess;
  try {
    proc = child.spawn(binary, args, {
      stdio: execFd !== undefined ? [...stdio, "pipe"] : stdio,
      env: cliEnviron(call.env, process.env, Object.keys(call.env).length === 0),
      detached: options.detached,
    });
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
  const jailed = proc as JailedChildProcess;
  // The exec pipe is ours: proc.stdio holds the caller's entries only.
  const execPipe = execFd !== undefined ? (proc.stdio[execFd] as Readable | null | undefined) ?? undefined : undefined;
  if (execFd !== undefined) (proc as unknown as { stdio: unknown[] }).stdio = proc.stdio.slice(0, execFd);
  let settle: (r: Report | null) => void;
  const report = new Promise<Report | null>((resolve) => (settle = resolve));
  Object.defineProperty(jailed, "report", { value: report, enumerable: true });
  const where: Where = server !== undefined ? { socket: server } : { binary, changesDir: call.changesDir };
  const changes = report.then((r) => (r && r.changes && typeof r.changes === "object" ? new ChangeSet(r.changes, where) : null));
  Object.defineProperty(jailed, "changes", { value: changes, enumerable: true });
  let translated: [number | null, NodeJS.Signals | null] | undefined;
  let execError: ExecError | undefined;
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
    else if (o.what === "exec" && execPipe !== undefined) {
      // As child_process's spawn of a program that cannot be executed (the
      // reason, which tooljail did not print with --exec-fd, in the message).
      execError = new ExecError(o.errno, call.argv, call.argv.join(" "), "", "", raw);
      translated = [execError.errno, null];
    }
    return translated;
  };
  const emit = proc.emit.bind(proc);
  // 'spawn' waits for both Node's (tooljail started) and the exec line.
  let nodeSpawned = false, execd = false, spawned = false, said = "";
  const emitSpawn = () => {
    if (nodeSpawned && execd && !spawned) {
      spawned = true;
      emit("spawn");
    }
  };
  // tooljail's exit can come before the pipe's last word: 'exit' waits for
  // the pipe's end, so that it never comes before 'spawn'.
  let pipeOpen = execPipe !== undefined;
  let heldExit: [number | null, NodeJS.Signals | null] | undefined;
  const onExit = (code: number | null, signal: NodeJS.Signals | null): boolean => {
    if (pipeOpen) {
      heldExit = [code, signal];
      (jailed as any).exitCode = null;
      return true;
    }
    const [c, s] = translate(code, signal);
    (jailed as any).exitCode = c;
    (jailed as any).signalCode = s;
    return execError !== undefined ? emit("error", execError) : emit("exit", c, s);
  };
  const pipeEnded = () => {
    if (!pipeOpen) return;
    pipeOpen = false;
    if (heldExit !== undefined) onExit(...heldExit);
  };
  if (execPipe !== undefined) {
    execPipe.on("data", (b: Buffer) => {
      said += b.toString("latin1");
      if (said === "exec\n") {
        execd = true;
        emitSpawn();
      }
    });
    execPipe.on("end", pipeEnded);
    execPipe.on("close", pipeEnded);
    execPipe.on("error", pipeEnded);
  }
  jailed.emit = ((event: string | symbol, ...rest: any[]) => {
    if (event === "spawn" && execPipe !== undefined) {
      nodeSpawned = true;
      emitSpawn();
      return true;
    }
    if (event === "exit") return onExit(rest[0], rest[1]);
    if (event === "close") {
      pipeEnded(); // (its own 'close' listener may come after Node's)
      const [code, signal] = translate(rest[0], rest[1]);
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
