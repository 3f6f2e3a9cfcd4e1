// Sessions: the pure decisions (tables), and a real `tooljail serve` the
// tests start: calls share the jail's /tmp and kept processes, not env;
// a call's jail options are refused; stop reports the calls; an attached
// session ends with its client's process.
"use strict";
const { describe, it, before, after } = require("node:test");
const assert = require("node:assert/strict");
const child = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const support = require("./support");
const tooljail = require("..");
const session = require("../lib/session");
const call = require("../lib/call");

const ID = "0123456789abcdef0123456789abcdef";

describe("decisions", () => {
  it("spells idle and maxLife as durations", () => {
    const cases = [[undefined, undefined], [30, "30000ms"], [0.0001, "1ms"], [1.5, "1500ms"], ["30m", "30m"]];
    for (const [v, want] of cases) assert.equal(session.sessionDuration("idle", v), want, String(v));
    for (const bad of [0, -1, Infinity, NaN, "", " ", true, {}]) assert.throws(() => session.sessionDuration("idle", bad), TypeError, String(bad));
  });

  it("takes toolchain prefixes, never auto", () => {
    assert.deepEqual(session.toolchains(undefined), []);
    assert.deepEqual(session.toolchains("/opt/go"), ["/opt/go"]);
    assert.deepEqual(session.toolchains(["/opt/go", "/home/me/.venv"]), ["/opt/go", "/home/me/.venv"]);
    assert.throws(() => session.toolchains("auto"), /"auto" finds the toolchain of a command.*name the prefixes/);
    assert.throws(() => session.toolchains(["/opt/go", "auto"]), /name the prefixes/);
    assert.throws(() => session.toolchains("opt/go"), /want an absolute path/);
    assert.throws(() => session.toolchains(7), TypeError);
  });

  it("spells the start request: the jail, nothing of a call", () => {
    const c = call.makeCall(["(session)"], { cwd: "/srv/p", profile: "default", memory: "2G", pids: 64, network: "allow" }, () => "/", { PATH: "/bin" });
    const op = { action: "start", idle: "30m" };
    assert.deepEqual(session.startRequest(c, ["/opt/go"], op),
      { session_op: op, workdir: "/srv/p", profile: "default", limits: { memory: "2G", pids: "64" }, network: "allow", toolchains: ["/opt/go"] });
    assert.deepEqual(session.startRequest(c, [], op, "extends = \"default\"\n").profile_toml, "extends = \"default\"\n");
    assert.ok(!("profile" in session.startRequest(c, [], op, "x")));
    const plain = call.makeCall(["(session)"], { cwd: "/srv/p" }, () => "/", {});
    assert.deepEqual(session.startRequest(plain, [], { action: "start" }), { session_op: { action: "start" }, workdir: "/srv/p" });
  });

  it("spells a call's request: session, cwd, keep_running, env, stdin, timeout only", () => {
    const c = call.makeCall(["sh", "-c", "x"], { env: { A: "1" }, input: "in", timeout: 1500 }, () => "/", { PATH: "/bin" });
    c.session = { id: ID, keepRunning: true, cwd: "/tmp" };
    assert.deepEqual(call.serverRequest(c), {
      argv: ["sh", "-c", "x"], stream: true, session: ID, cwd: "/tmp", keep_running: true,
      env: { A: "1" }, stdin: Buffer.from("in").toString("base64"), limits: { timeout: "1500ms" },
    });
    const bare = call.makeCall(["true"], {}, () => "/", { PATH: "/bin" });
    bare.session = { id: ID, keepRunning: false };
    assert.deepEqual(call.serverRequest(bare), { argv: ["true"], stream: true, session: ID });
  });

  it("spells a spawned call's CLI flags", () => {
    assert.deepEqual(session.sessionFlags(ID, "/s", false, undefined, undefined), ["--session", ID, "--server", "/s"]);
    assert.deepEqual(session.sessionFlags(ID, "/s", true, "/tmp", "1500ms"),
      ["--session", ID, "--server", "/s", "--keep-running", "--workdir", "/tmp", "--timeout", "1500ms"]);
  });

  it("refuses a call's jail options and a relative cwd", () => {
    for (const key of session.JAIL_ONLY) {
      assert.throws(() => session.checkCallOptions({ [key]: "x" }), (e) => e instanceof TypeError && e.message.includes(`${key} is the session's`), key);
    }
    assert.throws(() => session.checkCallOptions({ cwd: "sub" }), /absolute path in its jail/);
    assert.throws(() => session.checkCallOptions({ keepRunning: "yes" }), /keepRunning must be a boolean/);
    session.checkCallOptions({ cwd: "/tmp", keepRunning: true, env: {}, timeout: 5, input: "x", encoding: "buffer" });
  });

  it("reads answers: a value, an error line", () => {
    assert.deepEqual(session.sessionAnswer({ session: { id: ID } }, "session"), { id: ID });
    assert.deepEqual(session.sessionAnswer({ sessions: [] }, "sessions"), []);
    assert.throws(() => session.sessionAnswer({ error: { code: 125, message: "session x: no such session" } }, "session"),
      (e) => e instanceof tooljail.JailError && e.code === 125 && e.message === "session x: no such session");
    assert.throws(() => session.sessionAnswer({ status: "exited" }, "session"), /neither session nor an error/);
    assert.throws(() => session.sessionAnswer([1], "session"), /not an object/);
  });

  it("needs a server", async () => {
    const s = support.scratch();
    try {
      await assert.rejects(tooljail.Session.start(), (e) => e instanceof tooljail.JailError && /none was found.*tooljail serve/.test(e.message));
      await assert.rejects(tooljail.listSessions(), /none was found/);
      await assert.rejects(tooljail.Session.start({ socket: path.join(s.dir, "none.sock") }), tooljail.JailError);
    } finally {
      s.close();
    }
  });
});

/** Whether the binary has sessions (`tooljail session`). */
function hasSessions() {
  if (!support.BINARY) return false;
  const r = child.spawnSync(support.BINARY, ["session", "--help"], { encoding: "utf8" });
  return (r.stdout + r.stderr).includes("session start");
}
const skip = !support.BINARY ? "no tooljail binary: set TOOLJAIL_BIN (make node does)"
  : !hasSessions() ? "this tooljail binary has no sessions" : false;

/** Host pids running `sleep N` (a kept process, seen from the host's /proc). */
const sleeping = (n) => support.pidsWith(`sleep\0${n}\0`);

async function until(what, test, ms) {
  const deadline = Date.now() + ms;
  while (!test()) {
    if (Date.now() > deadline) throw new Error(`not within ${ms / 1000} s: ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

describe("real sessions", { skip }, () => {
  let scratch, srv;
  before(async () => {
    scratch = support.scratch();
    // A user's server gets the profile that lets it run without cgroup caps.
    srv = await support.server(scratch.config, ...(scratch.profile ? ["--profile", scratch.profile] : []));
  });
  after(async () => {
    if (srv) await srv.stop();
    if (scratch) scratch.close();
  });

  it("calls share /tmp and kept processes, not env; stop reports the calls", async () => {
    const s = await tooljail.Session.start({ socket: srv.socket, cwd: scratch.dir, idle: 120 });
    let last;
    assert.match(s.id, /^[0-9a-f]{32}$/);
    assert.equal(s.info.workdir, scratch.dir);
    assert.equal(s.info.detached, false);
    assert.equal(s.info.idle, "2m0s");
    try {
      let r = await s.run(["sh", "-c", "echo kept > /tmp/note; pwd"]);
      assert.equal(r.stdout, `${scratch.dir}\n`);
      assert.deepEqual([r.report.session.id, r.report.session.call], [s.id, 1]);
      r = await s.run(["cat", "/tmp/note"], { cwd: "/tmp" });
      assert.equal(r.stdout, "kept\n");
      assert.equal(r.report.session.call, 2);
      r = await s.run(["pwd"], { cwd: "/tmp" });
      assert.equal(r.stdout, "/tmp\n");

      // env is the call's own.
      r = await s.run(["sh", "-c", "echo \"[$NODE_SESSION_VAR]\""], { env: { NODE_SESSION_VAR: "one" } });
      assert.equal(r.stdout, "[one]\n");
      r = await s.run(["sh", "-c", "echo \"[$NODE_SESSION_VAR]\""]);
      assert.equal(r.stdout, "[]\n");

      // A kept process is there for the next call; one not kept is killed.
      r = last = await s.run(["sh", "-c", "sleep 3071 &"], { keepRunning: true });
      assert.equal(r.report.session.keep_running, true);
      // sh may end before its child has exec'd sleep.
      await until("sleep 3071 runs", () => sleeping(3071).length === 1, 5000);
      r = await s.run(["sh", "-c", "pgrep -f 'sleep 3071' >/dev/null && echo seen"]);
      assert.equal(r.stdout, "seen\n");
      r = await s.run(["sh", "-c", "sleep 3072 & echo started"]);
      assert.equal(r.stdout, "started\n");
      assert.ok(r.report.killed_leftover_processes >= 1, JSON.stringify(r.report));
      assert.deepEqual(sleeping(3072), []);
      r = await s.run(["sh", "-c", "ps -eo args | grep -c '^sleep 307[12]$'"]);
      assert.equal(r.stdout, "1\n");
      assert.equal(sleeping(3071).length, 1);

      // Input, a timeout, a non-zero exit and buffers: run's options and results.
      r = await s.run(["cat"], { input: "in\n", encoding: "buffer" });
      assert.deepEqual(r.stdout, Buffer.from("in\n"));
      await assert.rejects(s.run(["sleep", "5"], { timeout: 300 }), tooljail.TimeoutExpired);
      await assert.rejects(s.run(["sh", "-c", "exit 3"], { check: true }), (e) => e instanceof tooljail.CalledProcessError && e.code === 3);

      // The jail's options are the session's.
      for (const [key, value] of [["profile", "default"], ["memory", "1G"], ["network", "host"], ["socket", srv.socket], ["changes", "review"], ["toolchain", "/opt"]]) {
        await assert.rejects(s.run(["true"], { [key]: value }), (e) => e instanceof TypeError && e.message.includes(key), key);
      }
      await assert.rejects(s.run(["true"], { cwd: "tmp" }), TypeError);

      assert.ok((await tooljail.listSessions(srv.socket)).some((x) => x.id === s.id));
    } catch (e) {
      await s.stop();
      throw e;
    }
    const report = await s.stop();
    // Every field of the real answers is declared in src/report.ts.
    const src = fs.readFileSync(path.join(__dirname, "..", "src", "report.ts"), "utf8");
    const declared = (name) => new Set([...src.match(new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`))[1].matchAll(/^  (\w+)\??:/gm)].map((m) => m[1]));
    for (const [value, type] of [[report, "SessionReport"], [s.info, "SessionInfo"], [last.report.session, "SessionCall"]]) {
      assert.deepEqual(Object.keys(value).filter((k) => !declared(type).has(k)), [], type);
    }
    assert.equal(report.id, s.id);
    assert.equal(report.stopped_for, "stop");
    assert.equal(report.calls, 12);
    assert.equal(await s.stop(), report, "stop is idempotent");
    assert.deepEqual(sleeping(3071), [], "stop kills the kept processes");
    assert.ok(!(await tooljail.listSessions(srv.socket)).some((x) => x.id === s.id));
    await assert.rejects(s.run(["true"]), /has stopped/);
  });

  it("spawn: a call through `tooljail run --session`, stdin read to its end, kept processes kept", async () => {
    const s = await tooljail.Session.start({ socket: srv.socket, cwd: scratch.dir });
    try {
      const out = (p) => new Promise((resolve) => {
        const chunks = [];
        p.stdout.on("data", (b) => chunks.push(b));
        p.on("close", (code, signal) => resolve({ code, signal, stdout: Buffer.concat(chunks).toString() }));
      });
      let p = s.spawn(["sh", "-c", "cat > /tmp/in; sleep 3075 & pwd"], { stdio: ["pipe", "pipe", "inherit"], keepRunning: true, cwd: "/tmp" });
      p.stdin.end("from stdin\n");
      assert.deepEqual(await out(p), { code: 0, signal: null, stdout: "/tmp\n" });
      const report = await p.report;
      assert.deepEqual([report.session.id, report.session.call, report.session.keep_running], [s.id, 1, true]);
      await until("sleep 3075 runs", () => sleeping(3075).length === 1, 5000);
      p = s.spawn(["sh", "-c", "cat /tmp/in; exit 4"], { stdio: ["ignore", "pipe", "inherit"], env: { A: "1" } });
      assert.deepEqual(await out(p), { code: 4, signal: null, stdout: "from stdin\n" });
      assert.throws(() => s.spawn(["true"], { memory: "1G" }), /memory is the session's/);
    } finally {
      await s.stop();
    }
    assert.deepEqual(sleeping(3075), []);
  });

  it("a profile file goes by name, then as its text to a server that takes client profiles", async () => {
    const file = path.join(scratch.config, "session.toml");
    fs.writeFileSync(file, `extends = "default"\n${support.ROOT ? "" : 'allow_degraded = ["cgroup"]\n'}`);
    await assert.rejects(tooljail.Session.start({ socket: srv.socket, cwd: scratch.dir, profile: file }), /allow-client-profiles/);
    const open = await support.server(scratch.config, "--allow-client-profiles");
    try {
      const s = await tooljail.Session.start({ socket: open.socket, cwd: scratch.dir, profile: file });
      assert.equal(s.info.profile, "profile_toml");
      assert.equal((await s.run(["echo", "ok"])).stdout, "ok\n");
      assert.equal((await s.stop()).calls, 1);
    } finally {
      await open.stop();
    }
  });

  it("refuses toolchain auto and a bad start with JailError", async () => {
    await assert.rejects(tooljail.Session.start({ socket: srv.socket, toolchain: "auto" }), /name the prefixes/);
    await assert.rejects(tooljail.Session.start({ socket: srv.socket, cwd: scratch.dir, profile: "no-such-profile" }), tooljail.JailError);
  });

  it("an attached session ends when its client is killed", async () => {
    const kid = child.spawn(process.execPath, [path.join(__dirname, "session-client.js"), srv.socket, "3073"], { stdio: ["ignore", "pipe", "inherit"] });
    const line = await new Promise((resolve) => kid.stdout.once("data", (b) => resolve(JSON.parse(b.toString()))));
    assert.match(line.id ?? line.error, /^[0-9a-f]{32}$/);
    await until("sleep 3073 runs", () => sleeping(3073).length === 1, 5000);
    assert.ok((await tooljail.listSessions(srv.socket)).some((x) => x.id === line.id));
    kid.kill("SIGKILL");
    await until("the kept sleep 3073 is gone", () => sleeping(3073).length === 0, 30000);
    // The server lists the session until its stop is over (the jail's
    // cgroup removed, the audit line written), a moment after its
    // processes are gone: a CI run saw it still listed.
    for (const deadline = Date.now() + 10000; ; await new Promise((r) => setTimeout(r, 50))) {
      const listed = (await tooljail.listSessions(srv.socket)).some((x) => x.id === line.id);
      if (!listed) break;
      assert.ok(Date.now() < deadline, "the session is still listed 10 s after its processes are gone");
    }
  });

  it("a detached session outlives its client; the server stops it", async () => {
    const kid = child.spawnSync(process.execPath, [path.join(__dirname, "session-client.js"), srv.socket, "3074", "detach"], { encoding: "utf8" });
    const line = JSON.parse(kid.stdout);
    assert.match(line.id ?? line.error, /^[0-9a-f]{32}$/);
    const listed = (await tooljail.listSessions(srv.socket)).find((x) => x.id === line.id);
    assert.equal(listed?.detached, true);
    await until("sleep 3074 runs", () => sleeping(3074).length === 1, 5000);
    const stop = child.spawnSync(support.BINARY, ["session", "stop", line.id, "--server", srv.socket, "--json"], { encoding: "utf8" });
    assert.equal(stop.status, 0, stop.stderr);
    assert.equal(JSON.parse(stop.stdout).calls, 1);
    assert.deepEqual(sleeping(3074), []);
  });
});
