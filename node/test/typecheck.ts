// Compiled (not run) by types.test.js: the declared types give what the
// calls resolve with, and refuse what they refuse.
import { run, Session, listSessions } from "..";
import type { Result, SessionInfo, SessionReport } from "..";

export async function oneOffs(): Promise<void> {
  const text: string = (await run(["true"])).stdout;
  const withOptions: string = (await run(["true"], { timeout: 5 })).stdout;
  const bytes: Buffer = (await run(["true"], { encoding: "buffer" })).stdout;
  void [text, withOptions, bytes];
}

export async function sessions(): Promise<void> {
  const s = await Session.start({ cwd: "/srv", memory: "2G", idle: 30, maxLife: "8h", toolchain: ["/opt/go"], detach: false });
  const text: Result<string> = await s.run(["true"]);
  const bytes: Result<Buffer> = await s.run(["true"], { encoding: "buffer", keepRunning: true, cwd: "/tmp" });
  // @ts-expect-error the jail's options are the session's
  await s.run(["true"], { memory: "1G" });
  // @ts-expect-error the jail's options are the session's
  s.spawn(["true"], { profile: "default" });
  const pid: number | undefined = s.spawn(["true"], { stdio: "ignore", keepRunning: true }).pid;
  const id: string = s.id;
  const info: SessionInfo = s.info;
  const report: SessionReport = await s.stop();
  const listed: SessionInfo[] = await listSessions();
  void [text, bytes, pid, id, info, report, listed];
}
