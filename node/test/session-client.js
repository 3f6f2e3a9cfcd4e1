// Starts a session (attached unless argv says "detach") in the server at
// argv[2], keeps `sleep N` running in it, prints {id} and waits: the
// session tests kill it to see the session end with its client.
"use strict";
const tooljail = require("..");
const [socket, seconds, mode] = process.argv.slice(2);
(async () => {
  const s = await tooljail.Session.start({ socket, detach: mode === "detach" });
  await s.run(["sh", "-c", `sleep ${seconds} &`], { keepRunning: true });
  console.log(JSON.stringify({ id: s.id }));
  if (mode !== "detach") setInterval(() => {}, 1000);
})().catch((e) => {
  console.log(JSON.stringify({ error: e.message }));
  process.exit(1);
});
