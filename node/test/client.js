// Runs one tooljail.run as whoever starts it (the identity tests start it
// under setpriv) and prints {ok, code, stdout} or {error, name, message}.
"use strict";
const tooljail = require("..");
const [argv, options] = JSON.parse(process.argv[2]);
tooljail.run(argv, options).then(
  (r) => console.log(JSON.stringify({ ok: true, code: r.code, stdout: r.stdout })),
  (e) => console.log(JSON.stringify({ ok: false, name: e.name, message: e.message })),
);
