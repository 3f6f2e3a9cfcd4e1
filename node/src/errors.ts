// The rejections of run(), shaped as child_process.execFile's errors (code,
// signal, killed, cmd, stdout, stderr) so that code written for execFile
// reads them unchanged, plus the jail's report.

import { constants as osConstants } from "node:os";
import type { Report } from "./report";

export type Output = string | Buffer;

/** check: true and the command exited non-zero or was killed by a signal:
 * the fields of execFile's error for the same outcome. */
export class CalledProcessError extends Error {
  override name = "CalledProcessError";
  /** The exit code, or null when a signal ended the command. */
  code: number | null;
  signal: NodeJS.Signals | null;
  /** As execFile's: whether the caller killed it (never here: see TimeoutExpired, AbortError). */
  killed = false;
  cmd: string;
  stdout: Output;
  stderr: Output;
  report: Report;
  /** The run's change set (kept for review), or null when its mode is off. */
  changes: import("./changes").ChangeSet | null = null;

  constructor(cmd: string, code: number | null, signal: NodeJS.Signals | null, stdout: Output, stderr: Output, report: Report) {
    // execFile's message: "Command failed: CMD\nSTDERR".
    super(`Command failed: ${cmd}\n${typeof stderr === "string" ? stderr : stderr.toString()}` +
      (report.reason ? `\n(${report.reason})` : ""));
    this.cmd = cmd;
    this.code = code;
    this.signal = signal;
    this.stdout = stdout;
    this.stderr = stderr;
    this.report = report;
  }
}

/** The jail's wall-clock limit ended the run (its whole process tree was
 * killed), or no answer came within 5 s after it (then report is null).
 * stdout and stderr hold what the command wrote before. */
export class TimeoutExpired extends Error {
  override name = "TimeoutExpired";
  /** As Node's other timeouts. */
  code = "ETIMEDOUT";
  /** The timeout given, in ms (undefined: the profile's). */
  timeout: number | undefined;
  killed = true;
  signal: NodeJS.Signals | null = null;
  cmd: string;
  stdout: Output;
  stderr: Output;
  report: Report | null;

  constructor(cmd: string, timeout: number | undefined, stdout: Output, stderr: Output, report: Report | null) {
    super(`Command timed out after ${timeout === undefined ? "the profile's timeout" : `${timeout} ms`}: ${cmd}` +
      (report === null ? " (no report: the client stopped waiting for the jail)" : ""));
    this.cmd = cmd;
    this.timeout = timeout;
    this.stdout = stdout;
    this.stderr = stderr;
    this.report = report;
  }
}

/** tooljail could not run the command (its exit 125): a bad profile or
 * limit, a refused workdir, a layer this host cannot enforce, a server that
 * refused the request, cannot be reached or is not the caller's. */
export class JailError extends Error {
  override name = "JailError";
  /** The exit code tooljail gave (125 unless it said otherwise). */
  code: number;
  cmd: string;
  /** The report when there is one (null for a request refused before a run). */
  report: Report | null;

  constructor(message: string, cmd: string, code = 125, report: Report | null = null) {
    super(message);
    this.cmd = cmd;
    this.code = code;
    this.report = report;
  }
}

/** The program could not be executed in the jail (its 126 or 127): the error
 * child_process gives when spawn fails (code "ENOENT", "EACCES", ...; errno,
 * syscall, path, spawnargs), with the jail's reason and report. */
export class ExecError extends Error {
  override name = "Error";
  code: string;
  errno: number;
  syscall: string;
  path: string;
  spawnargs: string[];
  cmd: string;
  stdout: Output;
  stderr: Output;
  report: Report;

  constructor(errno: string, argv: string[], cmd: string, stdout: Output, stderr: Output, report: Report) {
    super(`spawn ${argv[0]} ${errno}` + (report.reason ? ` (in the jail: ${report.reason})` : ""));
    this.code = errno;
    this.errno = -((osConstants.errno as Record<string, number>)[errno] ?? 0);
    this.syscall = `spawn ${argv[0]}`;
    this.path = argv[0];
    this.spawnargs = argv.slice(1);
    this.cmd = cmd;
    this.stdout = stdout;
    this.stderr = stderr;
    this.report = report;
  }
}

/** A stream passed maxBuffer: the run was stopped, as execFile stops its
 * child (code ERR_CHILD_PROCESS_STDIO_MAXBUFFER, output cut at maxBuffer). */
export class MaxBufferError extends RangeError {
  code = "ERR_CHILD_PROCESS_STDIO_MAXBUFFER";
  cmd: string;
  stdout: Output;
  stderr: Output;
  killed = true;
  report = null;

  constructor(stream: "stdout" | "stderr", cmd: string, stdout: Output, stderr: Output) {
    super(`${stream} maxBuffer length exceeded`);
    this.cmd = cmd;
    this.stdout = stdout;
    this.stderr = stderr;
  }
}

/** The signal option aborted the run; the jail is gone when this is thrown. */
export class AbortError extends Error {
  override name = "AbortError";
  code = "ABORT_ERR";
  cmd: string;
  stdout: Output;
  stderr: Output;

  constructor(cmd: string, stdout: Output, stderr: Output, cause: unknown) {
    super("The operation was aborted", { cause });
    this.cmd = cmd;
    this.stdout = stdout;
    this.stderr = stderr;
  }
}
