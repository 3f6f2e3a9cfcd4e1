// run(): child_process.execFile's promise form with the command in a jail.

import * as fs from "node:fs";
import { Call, CallOptions, Transport, chooseTransport, makeCall, outcome } from "./call";
import { findBinary } from "./binary";
import { AbortError, CalledProcessError, ExecError, JailError, MaxBufferError, Output, TimeoutExpired } from "./errors";
import type { Report } from "./report";
import { ChangeSet, Where } from "./changes";
import { GaveUp, Stopped, runCli, runServer } from "./transport";

export interface RunOptions extends CallOptions {
  /** The command's whole stdin. Without it stdin is /dev/null (never this process's stdin). */
  input?: string | Buffer | Uint8Array;
  /** The jail's wall-clock limit in ms: the whole process tree is killed (TimeoutExpired). 0 or absent: the profile's (10 min by default). */
  timeout?: number;
  /** Bytes of stdout or stderr kept before the run is stopped (as execFile: default 1024 * 1024; Infinity for none but the jail's output limit). */
  maxBuffer?: number;
  /** "utf8" (default), another Buffer encoding, or "buffer" (or null) for Buffers. */
  encoding?: BufferEncoding | "buffer" | null;
  /** Aborting it kills the jail; run rejects with an AbortError once it is gone. */
  signal?: AbortSignal;
  /** Sent to the tooljail CLI on abort (it forwards it to the command); SIGKILL follows if the run does not end within 2 s. Default "SIGTERM". */
  killSignal?: NodeJS.Signals | number;
  /** Reject with CalledProcessError when the command exits non-zero or is killed by a signal. Default false. */
  check?: boolean;
}

export interface Result<T extends Output = string> {
  stdout: T;
  stderr: T;
  /** The exit code, or null when a signal ended the command. */
  code: number | null;
  /** The signal that ended the command ("SIGKILL" for a memory-limit kill, "SIGSYS" for a seccomp kill), or null. */
  signal: NodeJS.Signals | null;
  /** The jail's tooljail.report/v1 report (docs/report.md). */
  report: Report;
  /** The run's change set (the report's changes block, with apply() and
   * discard()); null when the run's mode is off. */
  changes: ChangeSet | null;
}

/** The report's changes block as a ChangeSet that settles the set where it
 * is kept: the server that ran it, or the CLI's store. */
export function changeSetOf(report: Report, where: Where): ChangeSet | null {
  const block = report.changes;
  if (block === undefined || block === null || typeof block !== "object") return null;
  return new ChangeSet(block, where);
}

export const DEFAULT_MAX_BUFFER = 1024 * 1024;

function decoder(encoding: RunOptions["encoding"]): (b: Buffer) => Output {
  if (encoding === "buffer" || encoding === null) return (b) => b;
  const enc = encoding ?? "utf8";
  if (!Buffer.isEncoding(enc)) throw new TypeError(`encoding ${JSON.stringify(enc)}: not a Buffer encoding; pass "utf8", another BufferEncoding or "buffer"`);
  return (b) => b.toString(enc);
}

/** Runs argv in a jail and resolves when it is gone, as execFile's promise
 * form does (node/README.md, "Differences from execFile"). */
export function run(argv: string[], options: RunOptions & { encoding: "buffer" | null }): Promise<Result<Buffer>>;
export function run(argv: string[], options?: RunOptions): Promise<Result<string>>;
export async function run(argv: string[], options: RunOptions = {}): Promise<Result<Output>> {
  const call = makeCall(argv, options, () => process.cwd(), process.env);
  let transport: Transport;
  try {
    transport = chooseTransport(options.socket, process.env, process.geteuid!(), fs.existsSync, () => findBinary());
  } catch (e) {
    throw new JailError((e as Error).message, call.argv.join(" "));
  }
  if (transport.kind === "server" && call.changesDir !== undefined) {
    throw new JailError(`changesDir ${call.changesDir}: only the CLI takes it; the server at ${transport.where} keeps its clients' change sets in its own store: drop changesDir, or pass no socket`, call.argv.join(" "));
  }
  return runCall(call, transport, options);
}

/** Runs a checked call through transport and gives run's result: run's, and
 * a Session's calls (call.session set, transport its server). */
export async function runCall(call: Call, transport: Transport, options: RunOptions): Promise<Result<Output>> {
  const decode = decoder(options.encoding);
  const cmd = call.argv.join(" ");
  const maxBuffer = options.maxBuffer ?? DEFAULT_MAX_BUFFER;
  if (typeof maxBuffer !== "number" || !(maxBuffer >= 0)) throw new RangeError(`maxBuffer must be a number >= 0, not ${String(maxBuffer)}`);
  if (options.signal?.aborted) throw new AbortError(cmd, decode(Buffer.alloc(0)), decode(Buffer.alloc(0)), options.signal.reason);

  const chunks = { stdout: [] as Buffer[], stderr: [] as Buffer[] };
  const sizes = { stdout: 0, stderr: 0 };
  const stop = new AbortController();
  let overflow: "stdout" | "stderr" | undefined;
  const onOutput = (stream: "stdout" | "stderr", chunk: Buffer) => {
    if (overflow !== undefined) return;
    const room = maxBuffer - sizes[stream];
    if (chunk.length > room) {
      // As execFile: keep maxBuffer bytes, stop the run.
      chunks[stream].push(chunk.subarray(0, Math.max(room, 0)));
      sizes[stream] = maxBuffer;
      overflow = stream;
      stop.abort();
      return;
    }
    chunks[stream].push(chunk);
    sizes[stream] += chunk.length;
  };
  const out = () => decode(Buffer.concat(chunks.stdout));
  const err = () => decode(Buffer.concat(chunks.stderr));
  const onAbort = () => stop.abort();
  options.signal?.addEventListener("abort", onAbort, { once: true });
  let report: Report;
  try {
    const go = transport.kind === "server" ? runServer : runCli;
    report = await go(transport.where, call, onOutput, stop.signal, options.killSignal ?? "SIGTERM");
  } catch (e) {
    if (e instanceof Stopped) {
      if (overflow !== undefined) throw new MaxBufferError(overflow, cmd, out(), err());
      throw new AbortError(cmd, out(), err(), options.signal?.reason);
    }
    if (e instanceof GaveUp) throw new TimeoutExpired(cmd, options.timeout, out(), err(), null);
    throw e;
  } finally {
    options.signal?.removeEventListener("abort", onAbort);
  }
  // A stop that came with the report's own arrival still stops the run.
  if (overflow !== undefined) throw new MaxBufferError(overflow, cmd, out(), err());
  const changes = changeSetOf(report, transport.kind === "server" ? { socket: transport.where } : { binary: transport.where, changesDir: call.changesDir });
  const o = outcome(report);
  switch (o.what) {
    case "timeout":
      throw new TimeoutExpired(cmd, options.timeout, out(), err(), report);
    case "exec":
      throw new ExecError(o.errno, call.argv, cmd, out(), err(), report);
    case "error":
      throw new JailError(o.reason, cmd, report.exit_code || 125, report);
  }
  if (options.check && (o.code !== 0 || o.signal !== null)) {
    const e = new CalledProcessError(cmd, o.code, o.signal, out(), err(), report);
    e.changes = changes;
    throw e;
  }
  return { stdout: out(), stderr: err(), code: o.code, signal: o.signal, report, changes };
}
