// The server-identity check (src/identity.ts): only a socket that the caller
// or root could have bound is trusted. As root, with clients run as uid
// 65534 and servers as 65534, 65533 and root.
"use strict";
const { describe, it, before, after } = require("node:test");
const assert = require("node:assert/strict");
const child = require("node:child_process");
const fs = require("node:fs");
const net = require("node:net");
const os = require("node:os");
const path = require("node:path");
const execFile = require("node:util").promisify(child.execFile);
const support = require("./support");
const { untrusted } = require("../lib/identity");

function st(uid, mode, kind) {
  return { uid, mode, isSocket: () => kind === "sock", isDirectory: () => kind === "dir" };
}

describe("untrusted (the rule)", () => {
  const cases = [
    ["own socket", st(1000, 0o140600, "sock"), 1000, true, undefined],
    ["root's socket", st(0, 0o140666, "sock"), 1000, true, undefined],
    ["another user's socket", st(1001, 0o140600, "sock"), 1000, true, /belongs to uid 1001/],
    ["not a socket", st(1000, 0o100600, "file"), 1000, true, /not a socket/],
    ["root's dir", st(0, 0o40755, "dir"), 1000, false, undefined],
    ["own private dir", st(1000, 0o40700, "dir"), 1000, false, undefined],
    ["sticky world-writable /tmp", st(0, 0o41777, "dir"), 1000, false, undefined],
    ["world-writable, not sticky", st(0, 0o40777, "dir"), 1000, false, /writable by other users/],
    ["group-writable", st(1000, 0o40770, "dir"), 1000, false, /writable by other users/],
    ["another user's dir", st(1001, 0o40700, "dir"), 1000, false, /belongs to uid 1001/],
    ["another user's dir, root caller", st(1001, 0o40755, "dir"), 0, false, /belongs to uid 1001/],
  ];
  for (const [name, s, euid, isSock, want] of cases) {
    it(name, () => {
      const got = untrusted("/x", s, euid, isSock);
      if (want === undefined) assert.equal(got, undefined);
      else assert.match(got, want);
    });
  }
});

const skip = !support.BINARY ? "no tooljail binary: set TOOLJAIL_BIN" : !support.ROOT ? "needs root (servers and clients of other users)" : false;

describe("servers of other users", { skip }, () => {
  let base;
  const procs = [];
  before(() => {
    base = fs.mkdtempSync(path.join(os.tmpdir(), "tooljail-node-id-"));
    fs.chmodSync(base, 0o755);
    const profile = path.join(base, "unprivileged.toml");
    fs.writeFileSync(profile, 'extends = "default"\nallow_degraded = ["cgroup"]\n');
    for (const uid of [65533, 65534]) {
      const d = path.join(base, `u${uid}`);
      fs.mkdirSync(path.join(d, "work"), { recursive: true });
      fs.chownSync(d, uid, uid);
      fs.chownSync(path.join(d, "work"), uid, uid);
    }
  });
  after(() => {
    for (const p of procs) if (p.exitCode === null) p.kill("SIGKILL");
    fs.rmSync(base, { recursive: true, force: true });
  });

  function as(uid, args, opts = {}) {
    return child.spawn("setpriv", [`--reuid=${uid}`, `--regid=${uid}`, "--clear-groups", ...args], opts);
  }

  async function serveAs(uid) {
    const sock = path.join(base, `u${uid}`, "srv", "sock");
    const p = as(uid, [support.BINARY, "serve", "--socket", sock, "--profile", path.join(base, "unprivileged.toml")],
      { stdio: "ignore", env: { PATH: process.env.PATH } });
    procs.push(p);
    const deadline = Date.now() + 15000;
    while (!fs.existsSync(sock)) {
      assert.ok(p.exitCode === null && Date.now() < deadline, `tooljail serve as ${uid} did not listen`);
      await new Promise((r) => setTimeout(r, 20));
    }
    return sock;
  }

  // Asynchronous: a stand-in server below lives in this process, and a
  // synchronous child would block the loop that answers it.
  async function clientAs(uid, argv, options, cwd) {
    const { stdout: out } = await execFile("setpriv", [`--reuid=${uid}`, `--regid=${uid}`, "--clear-groups",
      process.execPath, path.join(__dirname, "client.js"), JSON.stringify([argv, options])],
    { cwd, env: { PATH: process.env.PATH, XDG_RUNTIME_DIR: cwd, TOOLJAIL_BIN: support.BINARY } });
    return JSON.parse(out.toString());
  }

  it("a client of uid 65534 uses its own server", async () => {
    const sock = await serveAs(65534);
    const wd = path.join(base, "u65534", "work");
    const r = await clientAs(65534, ["id", "-u"], { socket: sock }, wd);
    assert.deepEqual(r, { ok: true, code: 0, stdout: "1000\n" });
  });

  it("a client of uid 65534 refuses the server of uid 65533", async () => {
    const sock = await serveAs(65533);
    const wd = path.join(base, "u65534");
    const r = await clientAs(65534, ["true"], { socket: sock }, wd);
    assert.equal(r.name, "JailError");
    assert.match(r.message, /belongs to uid 65533, neither this user \(65534\) nor root.*refusing to send it the command/);
  });

  // A socket root bound (a stand-in server that answers every request with
  // an error line) and one root bound then gave to 65533: the first is
  // trusted, the second refused before any connection.
  async function fakeServer(sockPath, owner) {
    const got = [];
    const s = net.createServer((c) => {
      c.on("data", (d) => got.push(d.toString()));
      c.end(JSON.stringify({ error: { code: 125, message: "the stand-in root server got it" } }) + "\n");
    });
    await new Promise((r) => s.listen(sockPath, r));
    fs.chmodSync(sockPath, 0o666);
    if (owner !== 0) fs.chownSync(sockPath, owner, owner);
    return { got, close: () => new Promise((r) => s.close(r)) };
  }

  it("a client of uid 65534 trusts root's socket", async () => {
    const sock = path.join(base, "root.sock");
    const f = await fakeServer(sock, 0);
    try {
      const r = await clientAs(65534, ["true"], { socket: sock }, path.join(base, "u65534"));
      assert.equal(r.name, "JailError");
      assert.equal(r.message, "the stand-in root server got it");
      assert.equal(f.got.length, 1);
    } finally {
      await f.close();
    }
  });

  it("a socket of another user in root's directory is refused unconnected", async () => {
    const sock = path.join(base, "other.sock");
    const f = await fakeServer(sock, 65533);
    try {
      const r = await clientAs(65534, ["true"], { socket: sock }, path.join(base, "u65534"));
      assert.equal(r.name, "JailError");
      assert.match(r.message, /the socket .*other\.sock belongs to uid 65533/);
      assert.deepEqual(f.got, []);
      // Root is refused too: 65533 is neither root nor root's own.
      const { stdout: asRoot } = await execFile(process.execPath, [path.join(__dirname, "client.js"), JSON.stringify([["true"], { socket: sock }])]);
      assert.match(JSON.parse(asRoot).message, /belongs to uid 65533, neither this user \(0\) nor root/);
    } finally {
      await f.close();
    }
  });

  it("a socket in a world-writable directory without the sticky bit is refused", async () => {
    const d = path.join(base, "open");
    fs.mkdirSync(d);
    fs.chmodSync(d, 0o777);
    const f = await fakeServer(path.join(d, "sock"), 0);
    try {
      const r = await clientAs(65534, ["true"], { socket: path.join(d, "sock") }, path.join(base, "u65534"));
      assert.match(r.message, /mode 777\) is writable by other users/);
      assert.deepEqual(f.got, []);
    } finally {
      await f.close();
    }
  });
});
