// The parity battery: the cases of the Python client's test_parity.py that
// execFile can express, each run three ways with Node's own execFile,
// unjailed, as the oracle: its outcome (exit code or signal, stdout, stderr,
// or the error's code and syscall) must be what run() gives through the CLI
// and through a real server. Documented differences (node/README.md): a
// non-zero exit resolves unless check is set, and a timeout rejects with
// TimeoutExpired, not execFile's killed error; the oracle is read with
// check's eyes for the first and the timeout cases are in run.test.js.
"use strict";
const { describe, it, before, after } = require("node:test");
const assert = require("node:assert/strict");
const child = require("node:child_process");
const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const support = require("./support");
const tooljail = require("..");

const skip = support.BINARY ? false : "no tooljail binary: set TOOLJAIL_BIN (make node does)";
const SH = "/bin/sh";
const BIG = 16 << 20;
const RANDOM = crypto.randomBytes(BIG);

const CASES = [
  ["binary", [SH, "-c", "printf '\\377\\000\\376'; printf '\\001' >&2"], { encoding: "buffer" }],
  ["exit codes", [SH, "-c", "echo o; echo e >&2; exit 3"], {}],
  ["exit 255", [SH, "-c", "exit 255"], {}],
  ["empty output", ["true"], { encoding: "buffer" }],
  ["empty text", ["true"], {}],
  ["signal", [SH, "-c", "kill -TERM $$"], {}],
  ["16 MiB random", ["cat", "random.bin"], { encoding: "buffer", maxBuffer: Infinity }],
  ["16 MiB input", ["cat"], { input: RANDOM, encoding: "buffer", maxBuffer: Infinity }],
  ["latin1", [SH, "-c", "printf '\\351t\\351'"], { encoding: "latin1" }],
  ["utf16le", [SH, "-c", "printf 'h\\000i\\000\\r\\000\\n\\000'"], { encoding: "utf16le" }],
  ["utf-8", [SH, "-c", "printf '\\303\\251t\\303\\251'"], {}],
  ["invalid utf-8", [SH, "-c", "printf 'a\\377b'"], {}],
  ["crlf bytes", [SH, "-c", "printf 'a\\r\\nb\\rc\\n'"], { encoding: "buffer" }],
  ["crlf text", [SH, "-c", "printf 'a\\r\\nb\\rc\\n' >&2"], {}],
  ["input", ["cat"], { input: Buffer.from("in\0put"), encoding: "buffer" }],
  ["text input", ["cat"], { input: "h\u00e9\r\n", encoding: "latin1" }],
  ["not found", ["/no/such/program"], {}],
  ["not executable", ["./noexec.sh"], {}],
  ["a directory", ["/etc"], {}],
  ["check", [SH, "-c", "echo o; exit 4"], { check: true }],
  ["check ok", [SH, "-c", "echo o"], { check: true }],
];

/** execFile, with input written to its stdin (its promise form has none). */
function oracle(argv, o) {
  return new Promise((resolve) => {
    const { input, check, ...opts } = o;
    const p = child.execFile(argv[0], argv.slice(1), opts, (err, stdout, stderr) => resolve({ err, stdout, stderr }));
    if (p.stdin) {
      p.stdin.on("error", () => {});
      p.stdin.end(input);
    }
  });
}

/** What a run ended in, the same shape for every way. */
function outcome({ err, stdout, stderr }) {
  if (err && typeof err.code === "string") return { error: err.code, syscall: err.syscall };
  return {
    code: err ? (typeof err.code === "number" ? err.code : null) : 0,
    signal: err ? err.signal ?? null : null,
    stdout: err && err.stdout !== undefined ? err.stdout : stdout,
    stderr: err && err.stderr !== undefined ? err.stderr : stderr,
  };
}

describe("parity with execFile", { skip }, () => {
  let scratch, srv;
  before(async () => {
    scratch = support.scratch();
    fs.writeFileSync(path.join(scratch.dir, "random.bin"), RANDOM);
    fs.writeFileSync(path.join(scratch.dir, "noexec.sh"), "#!/bin/sh\necho hi\n", { mode: 0o644 });
    srv = await support.server(scratch.config, ...(scratch.profile ? ["--profile", scratch.profile] : []));
  });
  after(async () => {
    if (srv) await srv.stop();
    if (scratch) scratch.close();
  });

  for (const [name, argv, o] of CASES) {
    it(name, async () => {
      const want = outcome(await oracle(argv, { cwd: scratch.dir, ...o }));
      for (const [way, extra] of [["cli", scratch.kw], ["server", { socket: srv.socket }]]) {
        // check mirrors execFile, which rejects on a non-zero exit; without
        // it run() resolves with the same fields.
        const got = outcome(await tooljail.run(argv, { cwd: scratch.dir, ...extra, ...o }).then(
          (r) => ({ err: r.code === 0 && r.signal === null ? null : { code: r.code, signal: r.signal, stdout: r.stdout, stderr: r.stderr }, stdout: r.stdout, stderr: r.stderr }),
          (e) => ({ err: e, stdout: e.stdout, stderr: e.stderr })));
        assert.deepEqual(got, want, `${name} via ${way}`);
      }
    });
  }
});
