// Change sets: the pure decisions (tables), and real runs with the changes
// option through the CLI and a server once the binary has `run --changes`.
"use strict";
const { describe, it, before, after } = require("node:test");
const assert = require("node:assert/strict");
const child = require("node:child_process");
const fs = require("node:fs");
const path = require("node:path");
const support = require("./support");
const tooljail = require("..");
const changes = require("../lib/changes");
const call = require("../lib/call");

const ID = "0123456789abcdef0123456789abcdef";

describe("decisions", () => {
  it("checks modes and ids", () => {
    for (const m of ["off", "record", "review", "apply-on-success"]) assert.equal(changes.checkMode(m), m);
    assert.equal(changes.checkMode(undefined), undefined);
    for (const bad of ["", "Review", "apply", 1, true]) assert.throws(() => changes.checkMode(bad), /want one of "off"/);
    assert.equal(changes.checkId(ID), ID);
    for (const bad of ["", ID.toUpperCase(), ID.slice(1), ID + "0", "../" + ID.slice(3), null, 7]) assert.throws(() => changes.checkId(bad), /32 lowercase hex/);
  });

  it("spells the CLI's changes commands", () => {
    const cases = [
      [["apply", ID, undefined, false, undefined], ["changes", "apply", ID, "--json"]],
      [["apply", ID, "/s", true, undefined], ["changes", "apply", ID, "--json", "--force", "--changes-dir", "/s"]],
      [["discard", ID], ["changes", "discard", ID, "--json"]],
      [["diff", ID, undefined, false, "a.txt"], ["changes", "diff", ID, "a.txt"]],
      [["list"], ["changes", "list", "--json"]],
    ];
    for (const [args, want] of cases) assert.deepEqual(changes.cliArgs(...args), want, JSON.stringify(args));
  });

  it("spells the server's changes_op", () => {
    assert.deepEqual(changes.opRequest("apply", ID, true), { changes_op: { action: "apply", id: ID, force: true } });
    assert.deepEqual(changes.opRequest("diff", ID, false, "/work/a"), { changes_op: { action: "diff", id: ID, path: "/work/a" } });
    assert.throws(() => changes.opRequest("rm", ID), /want one of list/);
    assert.throws(() => changes.opRequest("apply", "nope"), /32 lowercase hex/);
  });

  it("reads answers: a result, a conflict, an error", () => {
    assert.deepEqual(changes.answer(ID, { changes: { applied: 2 } }), { applied: 2 });
    const conflicts = [{ bind: "/work", path: "a.txt", why: "modified since the run (size 1 -> 2)" }];
    assert.throws(() => changes.answer(ID, { error: { code: 1, message: "m", conflicts } }), (e) => {
      assert.ok(e instanceof tooljail.ChangesConflict && e instanceof tooljail.JailError);
      assert.equal(e.code, 1);
      assert.deepEqual(e.conflicts, conflicts);
      assert.match(e.message, /\/work\/a\.txt: modified since the run \(size 1 -> 2\)/);
      assert.match(e.message, /force: true/);
      return true;
    });
    assert.throws(() => changes.answer(ID, { error: { code: 125, message: "change set x: not yours" } }),
      (e) => !(e instanceof tooljail.ChangesConflict) && e.message === "change set x: not yours");
    assert.throws(() => changes.answer(ID, { status: "exited" }), /neither a result nor an error/);
    // The CLI: exit 1 from apply is a conflict, its JSON names them.
    assert.deepEqual(changes.cliResult("apply", ID, 0, '{"applied":3}', ""), { applied: 3 });
    assert.equal(changes.cliResult("diff", ID, 0, "--- a\n", ""), "--- a\n");
    for (const out of [JSON.stringify({ conflicts }), JSON.stringify({ error: { conflicts } })]) {
      assert.throws(() => changes.cliResult("apply", ID, 1, out, "tooljail: conflicts\n"), (e) => e instanceof tooljail.ChangesConflict && e.conflicts[0].path === "a.txt");
    }
    assert.throws(() => changes.cliResult("discard", ID, 125, "", "tooljail: change set x: no such change set\n"),
      (e) => e.message === "change set x: no such change set" && e.code === 125);
  });

  it("puts changes in the call", () => {
    const c = call.makeCall(["true"], { cwd: "/srv/p", changes: "review", changesDir: "/tmp/store" }, () => "/", {});
    const flags = call.jailFlags(c);
    assert.deepEqual(flags.slice(flags.indexOf("--changes")), ["--changes", "review", "--changes-dir", "/tmp/store"]);
    assert.equal(call.serverRequest(c).changes, "review");
    const plain = call.makeCall(["true"], { cwd: "/srv/p" }, () => "/", {});
    assert.ok(!call.jailFlags(plain).includes("--changes"));
    assert.ok(!("changes" in call.serverRequest(plain)));
    assert.throws(() => call.makeCall(["true"], { cwd: "/", changes: "yes" }, () => "/", {}), /want one of/);
  });

  it("a set with no id cannot be applied", async () => {
    const empty = new tooljail.ChangeSet({ mode: "review", recorded: true, state: "empty", entries: [], totals: {} }, { socket: "/s" });
    assert.equal(empty.id, undefined);
    await assert.rejects(empty.apply(), /kept no change set/);
    await assert.rejects(empty.discard(), /kept no change set/);
    assert.ok(!("where" in JSON.parse(JSON.stringify(empty))));
  });

  it("refuses changesDir with a server", async () => {
    await assert.rejects(tooljail.run(["true"], { socket: "/nonexistent/sock", changes: "review", changesDir: "/tmp/x" }), /only the CLI takes it/);
  });
});

function hasChangesFlag() {
  if (!support.BINARY) return false;
  const r = child.spawnSync(support.BINARY, ["run", "--help"], { encoding: "utf8" });
  return (r.stdout + r.stderr).includes("--changes");
}
const skip = !support.BINARY ? "no tooljail binary: set TOOLJAIL_BIN (make node does)"
  : !hasChangesFlag() ? "this tooljail binary has no `run --changes`" : false;

describe("real runs", { skip }, () => {
  let scratch, srv, store;
  before(async () => {
    scratch = support.scratch();
    store = path.join(scratch.config, "changes");
    // The server's store in the scratch directory, not the host's.
    srv = await support.server(scratch.config, "--changes-dir", path.join(scratch.config, "server-changes"), ...(scratch.profile ? ["--profile", scratch.profile] : []));
  });
  after(async () => {
    if (srv) await srv.stop();
    if (scratch) scratch.close();
  });
  const file = (n) => path.join(scratch.dir, n);
  const read = (n) => fs.readFileSync(file(n), "utf8");

  for (const way of ["cli", "server"]) {
    const opts = () => (way === "cli" ? { ...scratch.kw, changes: "review", changesDir: store } : { ...scratch.kw, socket: srv.socket, changes: "review" });

    it(`${way}: review leaves the workdir alone; apply writes what the command saw`, async () => {
      fs.writeFileSync(file("old.txt"), "old\n");
      const r = await tooljail.run(["sh", "-c", "echo new > new.txt; echo changed > old.txt; cat new.txt"], opts());
      assert.equal(r.stdout, "new\n");
      assert.ok(r.changes instanceof tooljail.ChangeSet);
      // Every field of the real block and its entries is declared in src/report.ts.
      const src = fs.readFileSync(path.join(__dirname, "..", "src", "report.ts"), "utf8");
      const declared = (name) => new Set([...src.match(new RegExp(`export interface ${name} \\{([\\s\\S]*?)\\n\\}`))[1].matchAll(/^  (\w+)\??:/gm)].map((m) => m[1]));
      for (const [value, type] of [[r.report.changes, "ChangesReport"], [r.report.changes.entries[0], "ChangeEntry"], [r.report.changes.totals, "ChangeTotals"]]) {
        const known = declared(type);
        assert.deepEqual(Object.keys(value).filter((k) => !known.has(k)), [], type);
      }
      assert.equal(r.changes.state, "kept");
      assert.deepEqual(r.changes.entries.map((e) => [e.path, e.kind]).sort(), [["new.txt", "created"], ["old.txt", "modified"]]);
      assert.ok(!fs.existsSync(file("new.txt")));
      assert.equal(read("old.txt"), "old\n");
      assert.match(await r.changes.diff(), /\+changed/);
      const res = await r.changes.apply();
      assert.equal(res.applied, 2);
      assert.equal(read("new.txt"), "new\n");
      assert.equal(read("old.txt"), "changed\n");
      fs.rmSync(file("new.txt"));
    });

    it(`${way}: a conflict applies nothing and names the path; discard leaves nothing`, async () => {
      fs.writeFileSync(file("c.txt"), "old\n");
      const r = await tooljail.run(["sh", "-c", "echo mine > c.txt; echo more > other.txt"], opts());
      fs.writeFileSync(file("c.txt"), "theirs\n");
      await assert.rejects(r.changes.apply(), (e) => e instanceof tooljail.ChangesConflict && e.conflicts.map((c) => c.path).join() === "c.txt");
      assert.equal(read("c.txt"), "theirs\n");
      assert.ok(!fs.existsSync(file("other.txt")));
      await r.changes.discard();
      await assert.rejects(r.changes.apply(), tooljail.JailError);
      assert.ok(!fs.existsSync(file("other.txt")));
    });
  }

  it("spawn: the changes promise gives the run's set", async () => {
    const p = tooljail.spawn(["sh", "-c", "echo spawned > spawned.txt"], { ...scratch.kw, changes: "review", changesDir: store, stdio: "ignore" });
    await new Promise((resolve) => p.on("exit", resolve));
    const cs = await p.changes;
    assert.deepEqual(cs.entries.map((e) => e.path), ["spawned.txt"]);
    assert.ok(!fs.existsSync(file("spawned.txt")));
    await cs.discard();
  });

  it("cli: a set found again by its id", async () => {
    const r = await tooljail.run(["sh", "-c", "echo later > later.txt"], { ...scratch.kw, changes: "review", changesDir: store });
    const cs = await tooljail.changeSet(r.changes.id, { changesDir: store });
    assert.deepEqual(cs.entries.map((e) => e.path), ["later.txt"]);
    await cs.apply();
    assert.equal(read("later.txt"), "later\n");
  });

  it("cli: check carries the kept set of a failed apply-on-success run", async () => {
    await assert.rejects(tooljail.run(["sh", "-c", "echo half > half.txt; exit 3"], { ...scratch.kw, changes: "apply-on-success", changesDir: store, check: true }), (e) => {
      assert.ok(e instanceof tooljail.CalledProcessError);
      assert.equal(e.changes.state, "kept");
      return true;
    });
    assert.ok(!fs.existsSync(file("half.txt")));
  });
});
