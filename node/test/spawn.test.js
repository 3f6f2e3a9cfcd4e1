// spawn(): a ChildProcess-like object through `tooljail run` with the
// caller's stdio, as the Python client's Popen route.
"use strict";
const { it } = require("node:test");
const assert = require("node:assert/strict");
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
