// `tooljail mcp` driven by the official MCP TypeScript SDK's client, over
// stdio and over streamable HTTP (--listen): the tools of
// examples/tools.toml listed and called with valid and invalid arguments, and
// a running call cancelled. The Go SDK's tests (integration/mcp*_test.go)
// drive the same server from Go.

import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { describe, test } from "node:test";

import { auditLines, checkedTools, exampleTools, project, text, transports } from "./support.mjs";

// A valid call of each example tool and what its result must hold. A tool
// added to examples/tools.toml without a case here fails the listing test.
const valid = {
  read_file: { args: { path: "a.txt" }, isError: false, has: "second line" },
  write_file: { args: { path: "notes.txt", stdin: "written by mcpjs\n" }, isError: false, has: "" },
  run_python: { args: { stdin: "import os\nprint(sorted(os.listdir('.')))\n" }, isError: false, has: "'a.txt'" },
  run_tests: { args: { path: "test_sample.py" }, isError: false, has: "1 passed" },
  grep_repo: { args: { pattern: "hello mc.js" }, isError: false, has: "./a.txt:1:hello mcpjs" },
  // The allow mode's proxy reaches only the listed hosts, and this machine
  // reaches none of them: the proxy answers 502, curl fails. The call ran.
  fetch_url: { args: { url: "https://go.dev/" }, isError: true, has: "502" },
  git_status: { args: { untracked: "--untracked-files=all" }, isError: false, has: "test_sample.py" },
};

// Invalid arguments, each refused before anything runs, with the words
// tooljail's checker uses (docs/tools.md).
const invalid = [
  ["grep_repo", { pattern: "x", max_count: 5000 }, "refused by rule max 1000"],
  ["grep_repo", { pattern: "x", max_count: "ten" }, "max_count"],
  ["grep_repo", {}, "pattern"],
  ["read_file", {}, "path"],
  ["read_file", { path: "etc/shadow" }, "leads out of its directory"],
  ["read_file", { path: "../../etc/passwd" }, "leads out of the working directory"],
  ["write_file", { path: ".git/hooks/pre-commit", stdin: "x" }, "refused by rule pattern"],
  ["run_python", { stdin: "1", profile: "unconfined" }, 'parameter "profile": refused by rule undeclared'],
  ["git_status", { untracked: "--exec=sh" }, "untracked"],
  ["fetch_url", { url: "http://169.254.169.254/" }, "refused by rule pattern"],
];

for (const [kind, connect] of Object.entries(transports)) {
  describe(`tooljail mcp over ${kind}`, () => {
    test("lists every tool of examples/tools.toml with its parameters", async (t) => {
      const dir = project(t);
      const client = await connect(t, exampleTools, dir, path.join(dir, "..", `${path.basename(dir)}.audit`));
      const want = checkedTools(exampleTools);
      const { tools } = await client.listTools();
      assert.deepEqual(tools.map((x) => x.name).sort(), [...want.keys()].sort());
      for (const tool of tools) {
        const w = want.get(tool.name);
        const schema = tool.inputSchema;
        assert.equal(schema.type, "object", tool.name);
        assert.equal(schema.additionalProperties, false, `${tool.name} takes undeclared arguments`);
        assert.deepEqual([...(schema.required ?? [])].sort(), [...w.required].sort(), `${tool.name}: required`);
        const props = Object.keys(schema.properties ?? {}).sort();
        const params = [...w.required, ...w.optional, ...(w.stdin ? ["stdin"] : [])].sort();
        assert.deepEqual(props, params, `${tool.name}: properties`);
        assert.ok(valid[tool.name], `no valid call of ${tool.name} in this test: add one`);
      }
    });

    test("calls each tool with valid arguments", async (t) => {
      const dir = project(t);
      const audit = path.join(os.tmpdir(), `tooljail-mcpjs-${process.pid}-${kind}-valid.audit`);
      t.after(() => fs.rmSync(audit, { force: true }));
      const client = await connect(t, exampleTools, dir, audit);
      for (const [name, c] of Object.entries(valid)) {
        const r = await client.callTool({ name, arguments: c.args });
        assert.equal(r.isError ?? false, c.isError, `${name}: ${text(r)}`);
        assert.ok(text(r).includes(c.has), `${name}: ${JSON.stringify(text(r))} lacks ${JSON.stringify(c.has)}`);
        assert.ok(r.structuredContent?.call_id, `${name}: no call_id in ${JSON.stringify(r.structuredContent)}`);
        assert.equal(r.structuredContent?.decision, "admitted", name);
      }
      assert.equal(fs.readFileSync(path.join(dir, "notes.txt"), "utf8"), "written by mcpjs\n");
      const lines = auditLines(audit).filter((l) => l.tool);
      assert.deepEqual(lines.map((l) => l.tool).sort(), Object.keys(valid).sort(), "every call in the audit log");
    });

    test("refuses invalid arguments and runs nothing", async (t) => {
      const dir = project(t);
      const audit = path.join(os.tmpdir(), `tooljail-mcpjs-${process.pid}-${kind}-invalid.audit`);
      t.after(() => fs.rmSync(audit, { force: true }));
      const client = await connect(t, exampleTools, dir, audit);
      for (const [name, args, words] of invalid) {
        const r = await client.callTool({ name, arguments: args });
        assert.equal(r.isError, true, `${name} ${JSON.stringify(args)} was not refused: ${text(r)}`);
        assert.ok(text(r).includes(words), `${name} ${JSON.stringify(args)}: ${JSON.stringify(text(r))} lacks ${JSON.stringify(words)}`);
        assert.match(String(r.structuredContent?.decision), /^refused/, `${name} ${JSON.stringify(args)}`);
      }
      assert.ok(!fs.existsSync(path.join(dir, ".git", "hooks", "pre-commit")), "a refused write ran");
      // An unknown tool is refused as a tool result (and audited), naming
      // the tools there are.
      const r = await client.callTool({ name: "no_such_tool", arguments: {} });
      assert.equal(r.isError, true);
      assert.match(text(r), /no tool "no_such_tool" in .*; declared: read_file, /);
      assert.equal(r.structuredContent?.decision, "refused: unknown tool");
      const refused = auditLines(audit).filter((l) => l.tool);
      assert.equal(refused.length, invalid.length + 1, "every refusal in the audit log");
      assert.ok(refused.every((l) => /^refused/.test(l.decision)), JSON.stringify(refused));
    });

    test("a cancelled call's jail is killed and the session goes on", async (t) => {
      const dir = project(t);
      const audit = path.join(os.tmpdir(), `tooljail-mcpjs-${process.pid}-${kind}-cancel.audit`);
      t.after(() => fs.rmSync(audit, { force: true }));
      // A tool that runs until it is stopped; its sleep's argument is
      // unique, so the test can look for the process on the host.
      const tools = path.join(dir, "..", `${path.basename(dir)}-slow.toml`);
      t.after(() => fs.rmSync(tools, { force: true }));
      fs.writeFileSync(tools, `[tools.slow]
description = "Sleep until stopped."
profile = "default"
command = ["sh", "-c", 'touch started; exec sleep "$1"', "slow", "{secs}"]
params.secs = { type = "string", pattern = '[0-9]+\\.[0-9]+' }
limits = { timeout = "5m" }

[tools.read_file]
description = "Print a file."
command = ["cat", "--", "{path}"]
params.path = { type = "path" }
`);
      const client = await connect(t, tools, dir, audit);
      const secs = `300.${process.pid}${Date.now() % 100000}`;
      const running = () => {
        try {
          return execFileSync("pgrep", ["-f", `^sleep ${secs.replace(".", "\\.")}$`], { encoding: "utf8" }).trim();
        } catch {
          return ""; // pgrep exits 1 when nothing matches
        }
      };
      const ac = new AbortController();
      const call = client.callTool({ name: "slow", arguments: { secs } }, undefined, { signal: ac.signal, timeout: 600_000 });
      call.catch(() => {});
      for (let i = 0; !(fs.existsSync(path.join(dir, "started")) && running()); i++) {
        assert.ok(i < 1200, "the slow call never started");
        await new Promise((r) => setTimeout(r, 100));
      }
      ac.abort("the user stopped it");
      await assert.rejects(call, /abort|stopped/i);
      for (let i = 0; running(); i++) {
        assert.ok(i < 600, `the cancelled call's process (sleep ${secs}) still runs a minute after the cancellation`);
        await new Promise((r) => setTimeout(r, 100));
      }
      // Its audit line is written once the jail is gone.
      let line;
      for (let i = 0; !(line = auditLines(audit).find((l) => l.tool === "slow")); i++) {
        assert.ok(i < 600, "the cancelled call has no audit line");
        await new Promise((r) => setTimeout(r, 100));
      }
      assert.equal(line.status, "signaled", `the cancelled call's audit line: ${JSON.stringify(line)}`);
      assert.match(line.reason, /cancelled by the caller/, JSON.stringify(line));
      const r = await client.callTool({ name: "read_file", arguments: { path: "a.txt" } });
      assert.equal(r.isError ?? false, false, text(r));
      assert.ok(text(r).includes("hello mcpjs"));
    });
  });
}
