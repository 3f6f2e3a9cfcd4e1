// The two ways to a jail: a `tooljail serve` socket, or the CLI with
// --report. Both resolve to the report and pass the command's exact output
// bytes to onOutput(stream, chunk) as they come; both stop the run when stop
// is aborted (the CLI killed, the connection closed: the server cancels).

import * as child from "node:child_process";
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as path from "node:path";
import { Call, MAX_PROFILE, SETUP_FAILED, cliArgv, cliEnviron, isProfileFile, notServed, serverRequest } from "./call";
import { JailError } from "./errors";
import { trustedSocket } from "./identity";
import type { Report } from "./report";

/** How long past the jail's own timeout the client waits for the report: the
 * jail kills the tree at the timeout and reports at once, so only a stuck
 * server or CLI ever uses this margin. */
export const MARGIN_MS = 5000;
export const CONNECT_MS = 5000;
/** How long an aborted CLI gets after killSignal before SIGKILL (its death kills the jail). */
export const KILL_GRACE_MS = 2000;
const STDERR_TAIL = 8192;

/** No report within the timeout plus the margin. */
export class GaveUp extends Error {}
/** The run was stopped by the caller (abort, maxBuffer). */
export class Stopped extends Error {}

export type OnOutput = (stream: "stdout" | "stderr", chunk: Buffer) => void;
export type Run = (where: string, call: Call, onOutput: OnOutput, stop: AbortSignal, killSignal: NodeJS.Signals | number) => Promise<Report>;

function clientTimeout(call: Call): number | undefined {
  return call.timeoutMs === undefined ? undefined : call.timeoutMs + MARGIN_MS;
}

function cmdOf(call: Call): string {
  return call.argv.join(" ");
}

/** A private directory for the report, outside the workdir (tooljail refuses
 * a report inside the run's read-write binds). */
export function reportDir(workdir: string): string {
  let wd = workdir;
  try {
    wd = fs.realpathSync(workdir);
  } catch {
    // A workdir that does not exist: tooljail says so.
  }
  const bases = [process.env.XDG_RUNTIME_DIR, "/dev/shm", os.tmpdir(), "/tmp"];
  for (const base of bases) {
    if (!base || !fs.existsSync(base)) continue;
    let d: string;
    try {
      d = fs.mkdtempSync(path.join(base, "tooljail-report-"));
    } catch {
      continue;
    }
    const real = fs.realpathSync(d);
    if (real !== wd && !real.startsWith(wd.replace(/\/+$/, "") + "/")) return d;
    fs.rmdirSync(d);
  }
  throw new JailError(`no directory for the report outside the workdir ${workdir}: set TMPDIR`, "");
}

/** The report tooljail wrote to p, or null when there is none. */
export function readReport(p: string): Report | null {
  try {
    const raw = JSON.parse(fs.readFileSync(p, "utf8"));
    return raw && typeof raw === "object" && "status" in raw ? (raw as Report) : null;
  } catch {
    return null;
  }
}

export const runCli: Run = (binary, call, onOutput, stop, killSignal) => {
  return new Promise<Report>((resolve, reject) => {
    if (stop.aborted) return reject(new Stopped());
    let tmp: string;
    try {
      tmp = reportDir(call.workdir);
    } catch (e) {
      return reject(e);
    }
    const report = path.join(tmp, "report.json");
    const cleanup = () => fs.rmSync(tmp, { recursive: true, force: true });
    let proc: child.ChildProcess;
    try {
      proc = child.spawn(binary, cliArgv(call, report), {
        stdio: [call.stdin === undefined ? "ignore" : "pipe", "pipe", "pipe"],
        env: cliEnviron(call.env, process.env),
      });
    } catch (e) {
      cleanup();
      return reject(new JailError(`cannot start the tooljail CLI ${binary}: ${(e as Error).message}; set TOOLJAIL_BIN to the tooljail binary`, cmdOf(call)));
    }
    let tail = Buffer.alloc(0);
    let failed: Error | undefined;
    let why: "gaveup" | "stopped" | undefined;
    let timer: NodeJS.Timeout | undefined;
    let grace: NodeJS.Timeout | undefined;
    const limit = clientTimeout(call);
    if (limit !== undefined) {
      timer = setTimeout(() => {
        why = "gaveup";
        proc.kill("SIGKILL");
      }, limit);
    }
    const onStop = () => {
      if (why !== undefined) return;
      why = "stopped";
      // killSignal goes to tooljail, which forwards it to the command; if
      // that does not end the run soon, SIGKILL kills tooljail, and its
      // death kills the jail (PR_SET_PDEATHSIG).
      proc.kill(killSignal);
      grace = setTimeout(() => proc.kill("SIGKILL"), KILL_GRACE_MS);
    };
    stop.addEventListener("abort", onStop, { once: true });
    proc.stdout!.on("data", (b: Buffer) => onOutput("stdout", b));
    proc.stderr!.on("data", (b: Buffer) => {
      tail = Buffer.concat([tail, b]);
      if (tail.length > STDERR_TAIL) tail = tail.subarray(tail.length - STDERR_TAIL);
      onOutput("stderr", b);
    });
    if (proc.stdin) {
      // The command may stop reading: as execFile, not an error.
      proc.stdin.on("error", () => {});
      proc.stdin.end(call.stdin);
    }
    proc.on("error", (e) => {
      failed = e;
    });
    proc.on("close", (code) => {
      clearTimeout(timer);
      clearTimeout(grace);
      stop.removeEventListener("abort", onStop);
      const got = readReport(report);
      cleanup();
      if (why === "gaveup") return reject(new GaveUp());
      if (why === "stopped") return reject(new Stopped());
      if (failed !== undefined) {
        return reject(new JailError(`cannot start the tooljail CLI ${binary}: ${failed.message}; set TOOLJAIL_BIN to the tooljail binary`, cmdOf(call)));
      }
      if (got === null) {
        // Refused before a run (bad flag, unknown profile, refused workdir):
        // the CLI says why on stderr and writes no report.
        const lines = tail.toString("utf8").trim().split("\n");
        let message = lines[lines.length - 1] || `tooljail exited ${code} without a report`;
        if (message.startsWith("tooljail: ")) message = message.slice("tooljail: ".length);
        return reject(new JailError(message, cmdOf(call), code || SETUP_FAILED));
      }
      resolve(got);
    });
  });
};

/** The text of the call's profile file, read here (the server reads no file
 * of the client's); one inside the workdir is refused (the command could
 * rewrite it for the next run). */
export function readProfile(call: Call): string {
  const p = path.resolve(call.profile!);
  const wd = call.workdir.replace(/\/+$/, "") + "/";
  if ((p + "/").startsWith(wd)) {
    throw new JailError(`profile ${call.profile}: inside the run's workdir ${call.workdir}, where the command could rewrite it for the next run sent to a server; keep the profile outside the workdir`, cmdOf(call));
  }
  let data: Buffer;
  try {
    data = fs.readFileSync(p);
  } catch (e) {
    throw new JailError(`profile ${call.profile}: ${(e as Error).message}`, cmdOf(call));
  }
  if (data.length > MAX_PROFILE) throw new JailError(`profile ${call.profile}: larger than 1 MiB; a profile is a small TOML file`, cmdOf(call));
  return data.toString("utf8");
}

/** A profile file goes by name first (the server may serve it under that
 * string); a server that serves no such profile gets its text, as
 * `tooljail run --server --profile FILE` does. */
export const runServer: Run = async (socket, call, onOutput, stop) => {
  try {
    return await serverOnce(socket, call, onOutput, stop, undefined);
  } catch (e) {
    if (!(e instanceof JailError && isProfileFile(call.profile) && notServed(e.message, call.profile!))) throw e;
  }
  return serverOnce(socket, call, onOutput, stop, readProfile(call));
};

function serverOnce(socket: string, call: Call, onOutput: OnOutput, stop: AbortSignal, profileText: string | undefined): Promise<Report> {
  return new Promise<Report>((resolve, reject) => {
    if (stop.aborted) return reject(new Stopped());
    let real: string;
    try {
      real = trustedSocket(socket, process.geteuid!());
    } catch (e) {
      return reject(new JailError((e as Error).message, cmdOf(call)));
    }
    const sock = net.createConnection({ path: real });
    let settled = false;
    let timer: NodeJS.Timeout | undefined;
    const finish = (err: Error | null, report?: Report) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      stop.removeEventListener("abort", onStop);
      sock.destroy();
      if (err) reject(err);
      else resolve(report!);
    };
    const onStop = () => finish(new Stopped());
    stop.addEventListener("abort", onStop, { once: true });
    timer = setTimeout(() => finish(new JailError(`cannot reach the tooljail server at ${socket}: no answer to connect within ${CONNECT_MS / 1000} s`, cmdOf(call))), CONNECT_MS);
    sock.on("connect", () => {
      clearTimeout(timer);
      const limit = clientTimeout(call);
      if (limit !== undefined) timer = setTimeout(() => finish(new GaveUp()), limit);
      // The server may refuse early and close; its error line says why.
      sock.write(JSON.stringify(serverRequest(call, profileText)) + "\n");
    });
    sock.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EPIPE" || e.code === "ECONNRESET") return; // the line or the close tells
      finish(new JailError(`cannot reach the tooljail server at ${socket}: ${e.message}; start it with \`tooljail serve --socket ${socket}\`, or pass another socket (socket:, TOOLJAIL_SERVER)`, cmdOf(call)));
    });
    let pending: Buffer[] = [];
    const onLine = (raw: Buffer) => {
      let msg: any;
      try {
        msg = JSON.parse(raw.toString("utf8"));
      } catch {
        return finish(new JailError(`the tooljail server at ${socket} sent a line that is not JSON: ${raw.subarray(0, 200).toString()}`, cmdOf(call)));
      }
      if (msg === null || typeof msg !== "object" || Array.isArray(msg)) {
        return finish(new JailError(`the tooljail server at ${socket} sent ${raw.subarray(0, 200).toString()}, not an object`, cmdOf(call)));
      }
      if ("stream" in msg) {
        if (msg.stream === "stdout" || msg.stream === "stderr") onOutput(msg.stream, Buffer.from(msg.data ?? "", "base64"));
      } else if ("error" in msg) {
        const err = msg.error ?? {};
        finish(new JailError(String(err.message ?? "the server refused the request"), cmdOf(call), err.code ?? SETUP_FAILED));
      } else if ("status" in msg) {
        finish(null, msg as Report);
      } else {
        finish(new JailError(`the tooljail server at ${socket} sent ${raw.subarray(0, 200).toString()}: neither output, an error nor a report`, cmdOf(call)));
      }
    };
    sock.on("data", (b: Buffer) => {
      let start = 0;
      for (let i = b.indexOf(10); i !== -1 && !settled; i = b.indexOf(10, start)) {
        pending.push(b.subarray(start, i));
        const line = pending.length === 1 ? pending[0] : Buffer.concat(pending);
        pending = [];
        start = i + 1;
        onLine(line);
      }
      if (start < b.length) pending.push(b.subarray(start));
    });
    sock.on("close", () => finish(new JailError(`the tooljail server at ${socket} closed the connection before its report (did it stop or crash? see its log)`, cmdOf(call))));
  });
}

/** A server that says nothing for this long about a request line is taken as stuck. */
export const ANSWER_MS = 600_000;

/** Sends one request line (a changes_op or session_op) to the server at
 * socket and resolves with its one answer line, parsed. unreachable ends the
 * message when the server cannot be reached (what to do about it). keep: the
 * connection stays open after the answer and is resolved with it (an
 * attached session's, which the server ends the session with). */
export function requestLine(socket: string, request: Record<string, unknown>, unreachable: string, keep = false): Promise<{ msg: unknown; sock: net.Socket | null }> {
  return new Promise((resolve, reject) => {
    let real: string;
    try {
      real = trustedSocket(socket, process.geteuid!());
    } catch (e) {
      return reject(new JailError((e as Error).message, ""));
    }
    const sock = net.createConnection({ path: real });
    let settled = false;
    let buf = Buffer.alloc(0);
    const finish = (err: Error | null, msg?: unknown) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (err || !keep) sock.destroy();
      if (err) return reject(err);
      if (keep) sock.removeListener("data", onData);
      resolve({ msg, sock: keep ? sock : null });
    };
    let timer = setTimeout(() => finish(new JailError(`cannot reach the tooljail server at ${socket}: no answer to connect within ${CONNECT_MS / 1000} s`, "")), CONNECT_MS);
    sock.on("connect", () => {
      clearTimeout(timer);
      timer = setTimeout(() => finish(new JailError(`the tooljail server at ${socket} did not answer within ${ANSWER_MS / 1000} s`, "")), ANSWER_MS);
      sock.write(JSON.stringify(request) + "\n");
    });
    sock.on("error", (e: NodeJS.ErrnoException) => {
      if (e.code === "EPIPE" || e.code === "ECONNRESET") return;
      finish(new JailError(`cannot reach the tooljail server at ${socket}: ${e.message}; ${unreachable}`, ""));
    });
    const onData = (b: Buffer) => {
      buf = Buffer.concat([buf, b]);
      const i = buf.indexOf(10);
      if (i === -1) return;
      try {
        finish(null, JSON.parse(buf.subarray(0, i).toString("utf8")));
      } catch {
        finish(new JailError(`the tooljail server at ${socket} sent a line that is not JSON: ${buf.subarray(0, 200).toString()}`, ""));
      }
    };
    sock.on("data", onData);
    sock.on("close", () => finish(new JailError(`the tooljail server at ${socket} closed the connection before its answer`, "")));
  });
}
