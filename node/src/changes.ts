// Change sets (the `changes` option): the report's changes block as a
// ChangeSet, and apply/discard/show/diff of a kept set through the server
// that ran it or through the CLI and its store (docs/changes.md). The same
// decisions as the Python client's _changes.py.

import * as child from "node:child_process";
import { findBinary } from "./binary";
import { JailError } from "./errors";
import { requestLine } from "./transport";
import type { ChangeConflict, ChangeEntry, ChangesReport } from "./report";

/** The modes, in the order the docs give them. */
export const MODES = ["off", "record", "review", "apply-on-success"] as const;
export type ChangesMode = (typeof MODES)[number];

/** The actions of a changes_op request (docs/serve.md, "Change sets"). */
export const ACTIONS = ["list", "show", "diff", "apply", "discard"] as const;
export type ChangesAction = (typeof ACTIONS)[number];

const ID = /^[0-9a-f]{32}$/;

/** The changes option as the jail spells it; undefined stays undefined (the profile's mode). */
export function checkMode(value: unknown): ChangesMode | undefined {
  if (value === undefined || value === null) return undefined;
  if (typeof value !== "string" || !(MODES as readonly string[]).includes(value)) {
    throw new TypeError(`changes ${JSON.stringify(value)}: want one of ${MODES.map((m) => JSON.stringify(m)).join(", ")}`);
  }
  return value as ChangesMode;
}

export function checkId(value: unknown): string {
  if (typeof value !== "string" || !ID.test(value)) {
    throw new TypeError(`change set id ${JSON.stringify(value)}: want the 32 lowercase hex digits a report's changes.id gives`);
  }
  return value;
}

/** apply found paths changed on the host since the run: nothing was applied.
 * conflicts names each; apply({ force: true }) overwrites them. */
export class ChangesConflict extends JailError {
  override name = "ChangesConflict";
  id: string;
  conflicts: ChangeConflict[];

  constructor(message: string, id: string, conflicts: ChangeConflict[]) {
    super(message, "", 1);
    this.id = id;
    this.conflicts = conflicts;
  }
}

export function conflictMessage(id: string, conflicts: ChangeConflict[]): string {
  const named = conflicts.map((c) => `${c.bind ? c.bind.replace(/\/+$/, "") + "/" : ""}${c.path}: ${c.why}`).join("; ");
  return `change set ${id}: ${conflicts.length} path${conflicts.length === 1 ? "" : "s"} changed on the host since the run (${named}); ` +
    "nothing was applied: look at them, then apply({ force: true }) to overwrite them, or discard()";
}

/** Where a change set lives: the server that ran it, or the CLI's store. */
export type Where = { socket: string } | { binary: string | undefined; changesDir?: string };

/** `tooljail changes ACTION ...` (with --json but for diff, which prints text). */
export function cliArgs(action: ChangesAction, id?: string, changesDir?: string, force = false, p?: string): string[] {
  const args = ["changes", action];
  if (id !== undefined) args.push(id);
  if (action === "diff" && p) args.push(p);
  if (action !== "diff") args.push("--json");
  if (force) args.push("--force");
  if (changesDir !== undefined) args.push("--changes-dir", changesDir);
  return args;
}

/** The server's changes_op request object. */
export function opRequest(action: ChangesAction, id?: string, force = false, p?: string): Record<string, unknown> {
  if (!(ACTIONS as readonly string[]).includes(action)) throw new TypeError(`changes action ${JSON.stringify(action)}: want one of ${ACTIONS.join(", ")}`);
  const op: Record<string, unknown> = { action };
  if (id !== undefined) op.id = checkId(id);
  if (force) op.force = true;
  if (p) op.path = p;
  return { changes_op: op };
}

/** The result of a server's answer line: its "changes" value; ChangesConflict
 * or JailError for an error line. */
export function answer(id: string | undefined, msg: unknown): unknown {
  if (msg === null || typeof msg !== "object" || Array.isArray(msg)) throw new JailError(`the tooljail server answered ${JSON.stringify(msg)}, not an object`, "");
  const m = msg as Record<string, any>;
  if ("error" in m) {
    const err = m.error ?? {};
    if (Array.isArray(err.conflicts) && err.conflicts.length) throw new ChangesConflict(conflictMessage(id ?? "", err.conflicts), id ?? "", err.conflicts);
    throw new JailError(String(err.message ?? "the server refused the request"), "", err.code ?? 125);
  }
  if (!("changes" in m)) throw new JailError(`the tooljail server answered ${JSON.stringify(msg).slice(0, 200)}: neither a result nor an error`, "");
  return m.changes;
}

function lastLine(text: string): string {
  const lines = text.trim().split("\n");
  const line = lines[lines.length - 1] ?? "";
  return line.startsWith("tooljail: ") ? line.slice("tooljail: ".length) : line;
}

function conflictsOf(data: any): ChangeConflict[] {
  if (data && typeof data === "object") {
    if (Array.isArray(data.conflicts) && data.conflicts.length) return data.conflicts;
    if (data.error && Array.isArray(data.error.conflicts)) return data.error.conflicts;
  }
  return [];
}

/** The result of `tooljail changes ACTION`: its JSON (a diff: its text).
 * Exit 1 from apply is a conflict: nothing applied, each path named. */
export function cliResult(action: ChangesAction, id: string | undefined, code: number | null, out: string, err: string): unknown {
  if (action === "apply" && code === 1) {
    let data: unknown;
    try {
      data = JSON.parse(out);
    } catch {
      data = undefined;
    }
    const conflicts = conflictsOf(data);
    if (conflicts.length) throw new ChangesConflict(conflictMessage(id ?? "", conflicts), id ?? "", conflicts);
    throw new ChangesConflict(lastLine(err) || `change set ${id}: conflicts; nothing was applied`, id ?? "", []);
  }
  if (code !== 0) throw new JailError(lastLine(err) || `tooljail changes ${action} exited ${code}`, "", code ?? 125);
  if (action === "diff") return out;
  try {
    return JSON.parse(out);
  } catch {
    throw new JailError(`tooljail changes ${action} --json printed no JSON: ${out.slice(0, 200)}`, "");
  }
}

function cliOp(binary: string, args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  return new Promise((resolve, reject) => {
    const proc = child.spawn(binary, args, { stdio: ["ignore", "pipe", "pipe"] });
    const out: Buffer[] = [];
    const err: Buffer[] = [];
    proc.stdout!.on("data", (b: Buffer) => out.push(b));
    proc.stderr!.on("data", (b: Buffer) => err.push(b));
    proc.on("error", (e) => reject(new JailError(`cannot start the tooljail CLI ${binary}: ${e.message}; set TOOLJAIL_BIN to the tooljail binary`, "")));
    proc.on("close", (code) => resolve({ code, out: Buffer.concat(out).toString("utf8"), err: Buffer.concat(err).toString("utf8") }));
  });
}

/** Does a changes action where the set lives. */
export async function runOp(where: Where, action: ChangesAction, id?: string, force = false, p?: string): Promise<unknown> {
  if (id !== undefined) checkId(id);
  if ("socket" in where) {
    const { msg } = await requestLine(where.socket, opRequest(action, id, force, p), "the change set is kept by the server that ran it");
    return answer(id, msg);
  }
  if (!where.binary) throw new JailError(`no tooljail binary to act on change set ${id}: set TOOLJAIL_BIN`, "");
  const r = await cliOp(where.binary, cliArgs(action, id, where.changesDir, force, p));
  return cliResult(action, id, r.code, r.out, r.err);
}

/** What apply did: the entries written, and those it never writes. */
export interface ApplyResult {
  id: string;
  applied: number;
  skipped?: ChangeEntry[];
  conflicts?: ChangeConflict[];
}

/** The report's changes block (docs/report.md), with apply() and discard()
 * for a kept set (id set), through the server that ran it or else the CLI
 * and the same store. */
// The block's fields come from ChangesReport (declaration merging), not
// a second list of them.
export interface ChangeSet extends ChangesReport {}
export class ChangeSet {
  /** Where apply() and discard() go (not enumerable: JSON shows the block). */
  declare readonly where: Where;

  constructor(block: ChangesReport, where: Where) {
    Object.assign(this, block, { id: block.id || undefined, entries: block.entries ?? [] });
    Object.defineProperty(this, "where", { value: where, enumerable: false });
  }

  private need(what: string): string {
    if (!this.id) throw new JailError(`${what}: this run kept no change set (state ${JSON.stringify(this.state)}${this.reason ? ": " + this.reason : ""})`, "");
    return this.id;
  }

  /** Writes the set onto the host as one transaction. Rejects with
   * ChangesConflict, applying nothing, when a path changed on the host since
   * the run, unless force. */
  async apply(options: { force?: boolean } = {}): Promise<ApplyResult> {
    return (await runOp(this.where, "apply", this.need("apply"), !!options.force)) as ApplyResult;
  }

  /** Throws the set away; the host was never touched. */
  async discard(): Promise<unknown> {
    return runOp(this.where, "discard", this.need("discard"));
  }

  /** The whole kept set: every entry (the report caps them) with its baseline. */
  async show(): Promise<Record<string, any>> {
    return (await runOp(this.where, "show", this.need("show"))) as Record<string, any>;
  }

  /** A unified diff of the set's text files (a line for a binary one); p
   * picks one entry ("PATH", or "DEST/PATH" for one bind). */
  async diff(p?: string): Promise<string> {
    const r = await runOp(this.where, "diff", this.need("diff"), false, p);
    if (r !== null && typeof r === "object") return String((r as any).diff ?? "");
    return String(r);
  }
}

/** A kept change set by its id, as `show` gives it, with apply() and
 * discard(): through the server at socket, else the CLI (changesDir: its
 * store, default the user's). */
export async function changeSet(id: string, options: { socket?: string; changesDir?: string } = {}): Promise<ChangeSet> {
  checkId(id);
  const where: Where = options.socket !== undefined ? { socket: options.socket } : { binary: findBinary(), changesDir: options.changesDir };
  const shown = (await runOp(where, "show", id)) as Record<string, any>;
  const block: any = { ...(shown ?? {}) };
  block.id = block.id || id;
  if (block.entries === undefined && Array.isArray(block.changes)) block.entries = block.changes;
  return new ChangeSet(block, where);
}
