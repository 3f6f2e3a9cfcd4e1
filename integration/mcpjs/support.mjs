// What the tests share: the binary under test, a project for the tools to
// work in, the tools as `tooljail tools check` describes them, and the SDK's
// client connected to `tooljail mcp` over stdio or streamable HTTP.

import { execFileSync, spawn } from "node:child_process";
import * as fs from "node:fs";
import * as os from "node:os";
import * as path from "node:path";
import { fileURLToPath } from "node:url";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";

const here = path.dirname(fileURLToPath(import.meta.url));
export const repoRoot = path.resolve(here, "..", "..");
export const exampleTools = path.join(repoRoot, "examples", "tools.toml");

/** The tooljail binary under test: TOOLJAIL (make passes bin/tooljail). */
export function tooljail() {
  const bin = process.env.TOOLJAIL;
  if (!bin || !fs.existsSync(bin)) {
    throw new Error(`TOOLJAIL must name the tooljail binary to test (got ${JSON.stringify(bin)}): run \`make mcp-js\`, which builds bin/tooljail`);
  }
  return path.resolve(bin);
}

/** A fresh project: two files, a symlink out, a git repository. */
export function project(t) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "tooljail-mcpjs-"));
  t.after(() => fs.rmSync(dir, { recursive: true, force: true }));
  fs.writeFileSync(path.join(dir, "a.txt"), "hello mcpjs\nsecond line\n");
  fs.writeFileSync(path.join(dir, "test_sample.py"), "def test_ok():\n    assert 1 + 1 == 2\n");
  fs.symlinkSync("/etc", path.join(dir, "etc"));
  execFileSync("git", ["init", "-q", dir]);
  fs.chmodSync(dir, 0o755);
  return dir;
}

/** The tools of a file as tooljail's own checker prints them (`tools
 * check`), parsed: name, required and optional parameters, whether it takes
 * stdin. The oracle for what tools/list must say, from another code path
 * than the MCP server's schema. */
export function checkedTools(file) {
  const out = execFileSync(tooljail(), ["tools", "check", file], { encoding: "utf8" });
  const tools = new Map();
  let cur;
  for (const line of out.split("\n")) {
    if (/^[a-z_][a-z0-9_]*$/.test(line)) {
      cur = { name: line, required: [], optional: [], stdin: false };
      tools.set(line, cur);
      continue;
    }
    const param = /^  param ([a-z_][a-z0-9_]*): (.*)$/.exec(line);
    if (param && cur) {
      (/(^|, )required(,|$)/.test(param[2]) ? cur.required : cur.optional).push(param[1]);
    }
    if (cur && /^  workdir: .*stdin: yes/.test(line)) cur.stdin = true;
  }
  return tools;
}

// The servers' PATH: the system's, so run_tests finds Debian's python3 with
// pytest (.ci/deps.sh installs python3-pytest), not a python3 of the
// caller's that has none.
const serverPath = "/usr/sbin:/usr/bin:/sbin:/bin";

/** A client of `tooljail mcp --tools FILE --workdir DIR` over stdio. */
export async function stdioClient(t, tools, workdir, audit) {
  const transport = new StdioClientTransport({
    command: tooljail(),
    args: ["mcp", "--tools", tools, "--workdir", workdir, "--audit-log", audit],
    env: { PATH: serverPath, HOME: process.env.HOME ?? "/root" },
    stderr: "pipe",
  });
  const client = new Client({ name: "tooljail-mcpjs-test", version: "1.0.0" });
  await client.connect(transport);
  t.after(() => client.close());
  return client;
}

/** A client of `tooljail mcp --listen 127.0.0.1:0` over streamable HTTP:
 * the server is started here and its URL read from what it prints. */
export async function httpClient(t, tools, workdir, audit) {
  const child = spawn(tooljail(), ["mcp", "--tools", tools, "--workdir", workdir, "--audit-log", audit, "--listen", "127.0.0.1:0"], {
    stdio: ["ignore", "ignore", "pipe"],
    env: { PATH: serverPath, HOME: process.env.HOME ?? "/root" },
  });
  t.after(() => {
    if (child.exitCode === null && child.signalCode === null) child.kill("SIGTERM");
  });
  const url = await new Promise((resolve, reject) => {
    let seen = "";
    const timer = setTimeout(() => reject(new Error(`tooljail mcp --listen printed no URL within 60 s: ${seen}`)), 60_000);
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (d) => {
      seen += d;
      const m = /serving streamable HTTP on (http:\/\/\S+)/.exec(seen);
      if (m) {
        clearTimeout(timer);
        resolve(m[1]);
      }
    });
    child.on("exit", (code, sig) => {
      clearTimeout(timer);
      reject(new Error(`tooljail mcp --listen exited (${code ?? sig}) before serving: ${seen}`));
    });
  });
  const client = new Client({ name: "tooljail-mcpjs-test", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  t.after(() => client.close());
  return client;
}

export const transports = { stdio: stdioClient, http: httpClient };

/** A tool result's text, joined. */
export function text(result) {
  return (result.content ?? []).filter((c) => c.type === "text").map((c) => c.text).join("\n");
}

/** The audit log's call lines. */
export function auditLines(file) {
  if (!fs.existsSync(file)) return [];
  return fs.readFileSync(file, "utf8").split("\n").filter(Boolean).map((l) => JSON.parse(l));
}
