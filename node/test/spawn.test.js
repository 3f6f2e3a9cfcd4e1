// spawn(): a ChildProcess-like object through `tooljail run` with the
// caller's stdio, as the Python client's Popen route.
"use strict";
const { describe, it, before, after } = require("node:test");
const assert = require("node:assert/strict");
const child = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const support = require("./support");
const tooljail = require("..");

const skip = support.BINARY ? false : "set TOOLJAIL_BIN";

function collect(stream) {
  const chunks = [];
  stream.on("data", (c) => chunks.push(c));
  return new Promise((r) => stream.on("end", () => r(Buffer.concat(chunks))));
}

it("streams stdin, stdout and stderr and gives the exit code and report", { skip }, async () => {
  const s = support.scratch();
  try {
    const p = tooljail.spawn(["sh", "-c", "read x; printf 'got %s\\377' \"$x\"; echo err >&2; exit 5"], s.kw);
    const out = collect(p.stdout);
    const err = collect(p.stderr);
    p.stdin.end("line\n");
    const [code, signal] = await new Promise((r) => p.on("exit", (c, sig) => r([c, sig])));
    assert.equal(code, 5);
    assert.equal(signal, null);
    assert.deepEqual(await out, Buffer.from("got line\xff", "latin1"));
    assert.equal((await err).toString(), "err\n");
    const report = await p.report;
    assert.equal(report.status, "exited");
    assert.equal(report.exit_code, 5);
  } finally {
    s.close();
  }
});

it("kill() ends the jail: nothing of it is left", { skip }, async () => {
  const s = support.scratch();
  try {
    // The jailed sleep's own command line (tooljail's holds "sleep 1000.N"
    // with a space, not a NUL).
    const secs = `1000.${process.pid}`;
    const marker = `sleep\u0000${secs}\u0000`;
    const p = tooljail.spawn(["sh", "-c", `echo ready; exec sleep ${secs}`], { ...s.kw, stdio: ["ignore", "pipe", "inherit"] });
    await new Promise((r) => p.stdout.once("data", r));
    for (let i = 0; support.pidsWith(marker).length === 0; i++) {
      assert.ok(i < 300, "the jailed sleep never started");
      await new Promise((r) => setTimeout(r, 20));
    }
    assert.ok(support.pidsWith(marker).length > 0, "the command runs");
    p.kill("SIGTERM");
    const [code, signal] = await new Promise((r) => p.on("exit", (c, sig) => r([c, sig])));
    assert.ok(code !== 0 || signal !== null, `exit ${code} ${signal}`);
    for (let i = 0; support.pidsWith(marker).length > 0; i++) {
      assert.ok(i < 300, `the jailed command outlived kill(): ${support.pidsWith(marker)}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  } finally {
    s.close();
  }
});

// 'spawn', 'error', 'exit' and 'close' as child_process gives them, with
// Node's own spawn of the same argv, unjailed, as the oracle: tooljail's
// --exec-fd says when the command has been exec'd, or that it never was.
/** The events of p, in order, until 'close'; an error's child_process fields. */
function events(p) {
  const seen = [];
  p.on("spawn", () => seen.push(["spawn"]));
  p.on("error", (e) => seen.push(["error", { code: e.code, errno: e.errno, syscall: e.syscall, path: e.path, spawnargs: e.spawnargs }]));
  p.on("exit", (code, signal) => seen.push(["exit", code, signal]));
  const stderr = p.stderr ? collect(p.stderr) : Promise.resolve(Buffer.alloc(0));
  return new Promise((resolve) => p.on("close", async (code, signal) => {
    seen.push(["close", code, signal], ["exitCode", p.exitCode, p.signalCode], ["stderr", (await stderr).toString()]);
    resolve(seen);
  }));
}

/** Host pids whose whole command line is argv: the jailed command itself
 * once exec'd (tooljail's own command line holds argv after others). */
function running(argv) {
  const want = argv.map((a) => a + "\0").join("");
  return fs.readdirSync("/proc").filter((p) => {
    try {
      return /^\d+$/.test(p) && fs.readFileSync(`/proc/${p}/cmdline`, "latin1") === want;
    } catch {
      return false;
    }
  });
}

function hasSessions() {
  if (!support.BINARY) return false;
  const r = child.spawnSync(support.BINARY, ["session", "--help"], { encoding: "utf8" });
  return (r.stdout + r.stderr).includes("session start");
}

describe("spawn's events, as child_process's", { skip }, () => {
  let s, srv, noexec;
  before(async () => {
    s = support.scratch();
    srv = await support.server(s.config, ...(s.profile ? ["--profile", s.profile] : []));
    noexec = path.join(s.dir, "not-executable");
    fs.writeFileSync(noexec, "#!/bin/sh\necho no\n", { mode: 0o644 });
  });
  after(async () => {
    if (srv) await srv.stop();
    if (s) s.close();
  });

  const cases = () => [
    ["a program not found", ["no-such-program-tj", "a", "b"]],
    ["a directory", ["/etc", "x"]],
    ["a file not executable", [noexec]],
    ["a program that runs", ["sh", "-c", "echo out; exit 7"]],
    ["a program that exits at once", ["true"]],
  ];
  for (const way of ["cli", "server"]) {
    it(`gives child_process's events via ${way}: no 'spawn', 'error' and 'close' (-errno, null) for a program it cannot execute`, async () => {
      for (const stdio of way === "cli" ? ["pipe", ["ignore", "pipe", "pipe"]] : [["ignore", "pipe", "pipe"]]) {
        for (const [what, argv] of cases()) {
          const want = await events(child.spawn(argv[0], argv.slice(1), { stdio, cwd: s.dir }));
          const p = tooljail.spawn(argv, { ...(way === "cli" ? s.kw : { socket: srv.socket }), stdio });
          let error;
          p.on("error", (e) => (error = e));
          const got = await events(p);
          assert.deepEqual(got, want, `${what} (stdio ${JSON.stringify(stdio)})`);
          assert.equal(p.stdio.length, 3, "the exec pipe is not the caller's");
          const report = await p.report;
          if (error !== undefined) {
            // run()'s ExecError: the jail's reason (not printed) and report.
            assert.ok(error instanceof tooljail.ExecError, String(error));
            assert.equal(error.report, report);
            assert.equal(report.status, "setup_error");
            assert.match(error.message, /^spawn \S+ E[A-Z]+ \(in the jail: .+\)$/);
          } else {
            assert.equal(report.status, "exited");
          }
        }
      }
    });
  }

  it("emits 'spawn' only once the command has been exec'd, then 'exit' and 'close' as before", async () => {
    const argv = ["sh", "-c", "read x; exit 7", `mark-${process.pid}-${Date.now()}`];
    const p = tooljail.spawn(argv, { ...s.kw, stdio: ["pipe", "ignore", "inherit"] });
    const seen = events(p);
    await new Promise((r) => p.once("spawn", r));
    assert.equal(running(argv).length, 1, "at 'spawn' the command runs in the jail");
    p.stdin.end("line\n");
    assert.deepEqual(await seen, [["spawn"], ["exit", 7, null], ["close", 7, null], ["exitCode", 7, null], ["stderr", ""]]);
  });

  it("emits no 'spawn' when tooljail could not build the jail (125, jailError)", async () => {
    const p = tooljail.spawn(["true"], { ...s.kw, memory: "plenty", stdio: ["ignore", "ignore", "ignore"] });
    const seen = [];
    p.on("spawn", () => seen.push("spawn"));
    p.on("exit", (code) => seen.push(`exit ${code}`));
    await new Promise((r) => p.on("close", (code) => r(seen.push(`close ${code}`))));
    assert.deepEqual(seen, ["exit 125", "close 125"]);
    assert.ok(p.jailError instanceof tooljail.JailError);
  });

  it("a session's spawn with stdin ignored gives child_process's events; with stdin piped, exit 127 as before", { skip: hasSessions() ? false : "this tooljail binary has no sessions" }, async () => {
    const sess = await tooljail.Session.start({ socket: srv.socket, cwd: s.dir });
    try {
      for (const argv of [["no-such-program-tj", "a"], ["/etc"], ["sh", "-c", "exit 4"]]) {
        const want = await events(child.spawn(argv[0], argv.slice(1), { stdio: ["ignore", "pipe", "pipe"], cwd: s.dir }));
        assert.deepEqual(await events(sess.spawn(argv, { stdio: ["ignore", "pipe", "pipe"] })), want, argv[0]);
      }
      // The server reads stdin to its end before the call: no exec line
      // (the caller may wait for 'spawn' before ending stdin), today's codes.
      const p = sess.spawn(["no-such-program-tj"], { stdio: ["pipe", "pipe", "pipe"] });
      p.stdin.end();
      const seen = await events(p);
      assert.deepEqual(seen.slice(0, 3), [["spawn"], ["exit", 127, null], ["close", 127, null]]);
      assert.match(seen[4][1], /command not found/);
    } finally {
      await sess.stop();
    }
  });
});
