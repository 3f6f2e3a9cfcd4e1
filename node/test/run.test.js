// run() through the CLI and through a real `tooljail serve`: every option,
// real jails. Needs TOOLJAIL_BIN (make node passes bin/tooljail).
"use strict";
const { describe, it, before, after } = require("node:test");
const assert = require("node:assert/strict");
const crypto = require("node:crypto");
const fs = require("node:fs");
const path = require("node:path");
const support = require("./support");
const tooljail = require("..");

const skip = support.BINARY ? false : "no tooljail binary: set TOOLJAIL_BIN (make node does)";
let scratch, srv;

before(async () => {
  if (skip) return;
  scratch = support.scratch();
  srv = await support.server(scratch.config, ...(scratch.profile ? ["--profile", scratch.profile] : []));
});
after(async () => {
  if (srv) await srv.stop();
  if (scratch) scratch.close();
});

const WAYS = ["cli", "server"];
function via(way, o = {}) {
  return way === "cli" ? { ...scratch.kw, ...o } : { socket: srv.socket, ...o };
}

for (const way of WAYS) {
  describe(`run via ${way}`, { skip }, () => {
    it("gives exact bytes with encoding buffer, and the exit code", async () => {
      const r = await tooljail.run(["sh", "-c", "printf '\\377\\000\\376'; printf '\\001' >&2; exit 3"], via(way, { encoding: "buffer" }));
      assert.deepEqual(r.stdout, Buffer.from([0xff, 0, 0xfe]));
      assert.deepEqual(r.stderr, Buffer.from([1]));
      assert.equal(r.code, 3);
      assert.equal(r.signal, null);
      assert.equal(r.report.status, "exited");
    });

    it("decodes utf8 by default and other encodings when asked", async () => {
      const r = await tooljail.run(["sh", "-c", "printf '\\303\\251t\\303\\251'"], via(way));
      assert.equal(r.stdout, "été");
      const l = await tooljail.run(["sh", "-c", "printf '\\351'"], via(way, { encoding: "latin1" }));
      assert.equal(l.stdout, "é");
      const h = await tooljail.run(["sh", "-c", "printf 'ab'"], via(way, { encoding: "hex" }));
      assert.equal(h.stdout, "6162");
    });

    it("gives a signal as (null, name)", async () => {
      const r = await tooljail.run(["sh", "-c", "kill -TERM $$"], via(way));
      assert.equal(r.code, null);
      assert.equal(r.signal, "SIGTERM");
    });

    it("passes 16 MiB of random bytes exactly, with maxBuffer raised", async () => {
      const data = crypto.randomBytes(16 << 20);
      fs.writeFileSync(path.join(scratch.dir, "random.bin"), data);
      const r = await tooljail.run(["cat", "random.bin"], via(way, { encoding: "buffer", maxBuffer: Infinity }));
      assert.equal(r.stdout.length, data.length);
      assert.ok(r.stdout.equals(data));
    });

    it("stops the run past maxBuffer as execFile does", async () => {
      const marker = `maxbuf-${way}-${process.pid}`;
      const e = await tooljail.run(["sh", "-c", `head -c 100000 /dev/zero; exec sleep 1000 ${marker}`.replace(` ${marker}`, "") + ` # ${marker}`], via(way, { maxBuffer: 1000 }))
        .then(() => null, (e) => e);
      assert.ok(e instanceof RangeError, String(e));
      assert.equal(e.code, "ERR_CHILD_PROCESS_STDIO_MAXBUFFER");
      assert.equal(e.message, "stdout maxBuffer length exceeded");
      assert.equal(e.stdout, "\0".repeat(1000));
    });

    it("feeds input (string and Buffer)", async () => {
      const r = await tooljail.run(["cat"], via(way, { input: Buffer.from("in\0put"), encoding: "buffer" }));
      assert.deepEqual(r.stdout, Buffer.from("in\0put"));
      const s = await tooljail.run(["cat"], via(way, { input: "héllo" }));
      assert.equal(s.stdout, "héllo");
    });

    it("gives the command /dev/null without input", async () => {
      const r = await tooljail.run(["cat"], via(way));
      assert.equal(r.stdout, "");
      assert.equal(r.code, 0);
    });

    it("adds env over the profile's and drops credential-looking names", async () => {
      const r = await tooljail.run(["sh", "-c", 'echo "$V|${OPENAI_API_KEY-unset}|${HOME:+home}"'],
        via(way, { env: { V: "v a l", OPENAI_API_KEY: "sk-secret" } }));
      assert.equal(r.stdout, "v a l|unset|home\n");
      assert.ok(r.report.env_dropped.some((d) => d.name === "OPENAI_API_KEY"), JSON.stringify(r.report.env_dropped));
    });

    it("runs in cwd, the workdir", async () => {
      const sub = path.join(scratch.dir, `cwd-${way}`);
      fs.mkdirSync(sub, { recursive: true });
      fs.writeFileSync(path.join(sub, "here.txt"), "x");
      const r = await tooljail.run(["ls"], via(way, { cwd: sub }));
      assert.equal(r.stdout, "here.txt\n");
    });

    it("sets the jail's limits and network", async () => {
      const r = await tooljail.run(["true"], via(way, { memory: "64M", cpus: 0.5, pids: 32, network: "none" }));
      assert.equal(r.report.limits.memory_bytes, 64 << 20);
      assert.equal(r.report.limits.cpus, 0.5);
      assert.equal(r.report.limits.pids, 32);
      const n = await tooljail.run(["true"], via(way, { memory: 50 << 20 }));
      assert.equal(n.report.limits.memory_bytes, 50 << 20);
    });

    it("names the profile", async () => {
      const r = await tooljail.run(["true"], via(way));
      assert.equal(r.report.schema, "tooljail.report/v1");
      if (way === "cli" && scratch.profile) assert.match(r.report.profile, /unprivileged/);
      const e = await tooljail.run(["true"], via(way, { profile: "no-such-profile-tj" })).then(() => null, (e) => e);
      assert.ok(e instanceof tooljail.JailError, String(e));
      assert.equal(e.code, 125);
      assert.match(e.message, /no-such-profile-tj/);
    });

    it("rejects with CalledProcessError under check, with execFile's fields", async () => {
      const e = await tooljail.run(["sh", "-c", "echo o; echo e >&2; exit 4"], via(way, { check: true })).then(() => null, (e) => e);
      assert.ok(e instanceof tooljail.CalledProcessError, String(e));
      assert.equal(e.code, 4);
      assert.equal(e.signal, null);
      assert.equal(e.killed, false);
      assert.equal(e.stdout, "o\n");
      assert.equal(e.stderr, "e\n");
      assert.equal(e.cmd, "sh -c echo o; echo e >&2; exit 4");
      assert.equal(e.report.exit_code, 4);
      const k = await tooljail.run(["sh", "-c", "kill -KILL $$"], via(way, { check: true })).then(() => null, (e) => e);
      assert.equal(k.code, null);
      assert.equal(k.signal, "SIGKILL");
      const ok = await tooljail.run(["true"], via(way, { check: true }));
      assert.equal(ok.code, 0);
    });

    it("rejects a program the jail cannot execute as spawn does", async () => {
      const e = await tooljail.run(["/no/such/program"], via(way)).then(() => null, (e) => e);
      assert.equal(e.code, "ENOENT");
      assert.equal(e.errno, -2);
      assert.equal(e.syscall, "spawn /no/such/program");
      assert.equal(e.path, "/no/such/program");
      assert.equal(e.report.exit_code, 127);
      const d = await tooljail.run(["/etc"], via(way)).then(() => null, (e) => e);
      assert.equal(d.code, "EACCES");
    });

    it("times out: the tree killed, partial output and the report", async () => {
      const e = await tooljail.run(["sh", "-c", "echo part; exec sleep 30"], via(way, { timeout: 1000 })).then(() => null, (e) => e);
      assert.ok(e instanceof tooljail.TimeoutExpired, String(e));
      assert.equal(e.code, "ETIMEDOUT");
      assert.equal(e.timeout, 1000);
      assert.equal(e.stdout, "part\n");
      assert.equal(e.report.status, "timeout");
      assert.equal(e.report.limits.timeout_ms, 1000);
    });

    it("aborts: the jail is gone when the promise rejects", async () => {
      const marker = `4242.${way === "cli" ? 1 : 2}${process.pid % 1000}`;
      const ac = new AbortController();
      const p = tooljail.run(["sh", "-c", `echo started; exec sleep ${marker}`], via(way, { signal: ac.signal }));
      const deadline = Date.now() + 20000;
      while (support.pidsWith(`sleep\0${marker}`).length === 0) {
        assert.ok(Date.now() < deadline, "the command never started");
        await new Promise((r) => setTimeout(r, 20));
      }
      ac.abort(new Error("stop it"));
      const e = await p.then(() => null, (e) => e);
      assert.equal(e.name, "AbortError");
      assert.equal(e.code, "ABORT_ERR");
      assert.equal(e.cause.message, "stop it");
      // The CLI is waited for; a server cancels on the closed connection.
      const gone = Date.now() + 20000;
      while (support.pidsWith(`sleep\0${marker}`).length !== 0) {
        assert.ok(Date.now() < gone, "the jailed command outlived the abort");
        await new Promise((r) => setTimeout(r, 20));
      }
      if (way === "cli") assert.deepEqual(support.pidsWith(`sleep\0${marker}`), []);
      const already = await tooljail.run(["true"], via(way, { signal: AbortSignal.abort() })).then(() => null, (e) => e);
      assert.equal(already.name, "AbortError");
    });

    it("refuses bad arguments before starting anything", async () => {
      await assert.rejects(tooljail.run("ls", via(way)), TypeError);
      await assert.rejects(tooljail.run([], via(way)), TypeError);
      await assert.rejects(tooljail.run(["true"], via(way, { env: { "A=B": "x" } })), TypeError);
      await assert.rejects(tooljail.run(["true"], via(way, { timeout: -1 })), RangeError);
      await assert.rejects(tooljail.run(["true"], via(way, { encoding: "klingon" })), TypeError);
      await assert.rejects(tooljail.run(["true"], via(way, { memory: 1.5 })), TypeError);
    });
  });
}

describe("servers", { skip }, () => {
  it("a socket that does not exist is a clear JailError", async () => {
    const e = await tooljail.run(["true"], { socket: path.join(scratch.dir, "nope.sock") }).then(() => null, (e) => e);
    assert.ok(e instanceof tooljail.JailError, String(e));
    assert.match(e.message, /cannot reach the tooljail server at .*nope\.sock: no such file; start it with `tooljail serve --socket/);
  });

  it("TOOLJAIL_SERVER names the server; the default socket is found", async () => {
    process.env.TOOLJAIL_SERVER = path.join(scratch.dir, "env.sock");
    try {
      const e = await tooljail.run(["true"]).then(() => null, (e) => e);
      assert.match(e.message, /env\.sock/);
    } finally {
      delete process.env.TOOLJAIL_SERVER;
    }
    fs.symlinkSync(srv.socket, path.join(scratch.dir, "tooljail.sock"));
    try {
      const r = await tooljail.run(["true"]);
      assert.equal(r.code, 0);
    } finally {
      fs.unlinkSync(path.join(scratch.dir, "tooljail.sock"));
    }
  });
});
