"""Change sets: the pure decisions (table tests), and real runs with
changes= through the CLI and a server once the binary has --changes."""

import json
import os
import subprocess
import unittest

import support  # noqa: F401  (puts the source tree's tooljail first)
import tooljail
from tooljail import _call, _changes
from tooljail._changes import ChangeSet, ChangesConflict, Where

ID = "0123456789abcdef0123456789abcdef"


class TestDecisions(unittest.TestCase):
    def test_modes(self):
        for mode in ("off", "record", "review", "apply-on-success"):
            self.assertEqual(_changes.check_mode(mode), mode)
        self.assertIsNone(_changes.check_mode(None))
        for bad in ("", "Review", "apply", 1, True):
            with self.assertRaises(ValueError) as cm:
                _changes.check_mode(bad)
            self.assertIn("'review'", str(cm.exception))

    def test_ids(self):
        self.assertEqual(_changes.check_id(ID), ID)
        for bad in ("", ID.upper(), ID[:-1], ID + "0", "../" + ID[3:], None, 7):
            with self.assertRaises(ValueError):
                _changes.check_id(bad)

    def test_cli_argv(self):
        cases = [
            (("apply", ID, None, False, None), ["tj", "changes", "apply", ID, "--json"]),
            (("apply", ID, "/s", True, None), ["tj", "changes", "apply", ID, "--json", "--force", "--changes-dir", "/s"]),
            (("discard", ID, None, False, None), ["tj", "changes", "discard", ID, "--json"]),
            (("show", ID, "/s", False, None), ["tj", "changes", "show", ID, "--json", "--changes-dir", "/s"]),
            (("diff", ID, None, False, "a.txt"), ["tj", "changes", "diff", ID, "a.txt"]),
            (("diff", ID, None, False, None), ["tj", "changes", "diff", ID]),
            (("list", None, None, False, None), ["tj", "changes", "list", "--json"]),
        ]
        for args, want in cases:
            self.assertEqual(_changes.cli_argv("tj", *args), want, args)

    def test_op_request(self):
        self.assertEqual(_changes.op_request("apply", ID, True), {"changes_op": {"action": "apply", "id": ID, "force": True}})
        self.assertEqual(_changes.op_request("diff", ID, path="/work/a"),
                         {"changes_op": {"action": "diff", "id": ID, "path": "/work/a"}})
        self.assertEqual(_changes.op_request("list"), {"changes_op": {"action": "list"}})
        with self.assertRaises(ValueError):
            _changes.op_request("rm", ID)
        with self.assertRaises(ValueError):
            _changes.op_request("apply", "nope")

    def test_server_answer(self):
        self.assertEqual(_changes.answer("apply", ID, {"changes": {"applied": 2}}), {"applied": 2})
        conflicts = [{"bind": "/work", "path": "a.txt", "why": "modified since the run (size 1 -> 2)"}]
        with self.assertRaises(ChangesConflict) as cm:
            _changes.answer("apply", ID, {"error": {"code": 1, "message": "m", "conflicts": conflicts}})
        e = cm.exception
        self.assertIsInstance(e, tooljail.JailError)
        self.assertEqual(e.code, 1)
        self.assertEqual(e.id, ID)
        self.assertEqual(e.conflicts[0].path, "a.txt")
        self.assertIn("/work/a.txt: modified since the run (size 1 -> 2)", str(e))
        self.assertIn("force=True", str(e))
        with self.assertRaises(tooljail.JailError) as cm:
            _changes.answer("apply", ID, {"error": {"code": 125, "message": "change set x: not yours"}})
        self.assertNotIsInstance(cm.exception, ChangesConflict)
        self.assertEqual(str(cm.exception), "change set x: not yours")
        with self.assertRaises(tooljail.JailError):
            _changes.answer("apply", ID, {"status": "exited"})

    def test_cli_result(self):
        self.assertEqual(_changes.cli_result("apply", ID, 0, b'{"id": "x", "applied": 3}', b""), {"id": "x", "applied": 3})
        self.assertEqual(_changes.cli_result("diff", ID, 0, b"--- a\n+++ b\n", b""), "--- a\n+++ b\n")
        conflicts = [{"bind": "/work", "path": "b", "why": "created since the run"}]
        for out in (json.dumps({"id": ID, "conflicts": conflicts}), json.dumps({"error": {"conflicts": conflicts}})):
            with self.assertRaises(ChangesConflict) as cm:
                _changes.cli_result("apply", ID, 1, out.encode(), b"tooljail: conflicts\n")
            self.assertEqual([c.path for c in cm.exception.conflicts], ["b"])
        with self.assertRaises(ChangesConflict) as cm:
            _changes.cli_result("apply", ID, 1, b"", b"tooljail: change set x: 1 conflict: b\n")
        self.assertEqual(str(cm.exception), "change set x: 1 conflict: b")
        with self.assertRaises(tooljail.JailError) as cm:
            _changes.cli_result("discard", ID, 125, b"", b"tooljail: change set x: no such change set\n")
        self.assertEqual((str(cm.exception), cm.exception.code), ("change set x: no such change set", 125))

    def test_call_spells_changes(self):
        call = _call.make_call(["true"], cwd="/srv/p", changes="review", changes_dir="/tmp/store",
                               environ={})
        argv = _call.cli_argv("tj", call, "/r.json")
        i = argv.index("--changes")
        self.assertEqual(argv[i:i + 4], ["--changes", "review", "--changes-dir", "/tmp/store"])
        self.assertLess(i, argv.index("--"))
        self.assertEqual(_call.server_request(call)["changes"], "review")
        plain = _call.make_call(["true"], cwd="/srv/p", environ={})
        self.assertNotIn("--changes", _call.cli_argv("tj", plain, "/r.json"))
        self.assertNotIn("changes", _call.server_request(plain))
        with self.assertRaises(ValueError):
            _call.make_call(["true"], cwd="/srv/p", changes="yes", environ={})

    def test_change_set_view(self):
        block = {"mode": "review", "recorded": True, "id": ID, "state": "kept",
                 "entries": [{"bind": "/work", "path": "a", "kind": "created", "type": "file", "size": 1}],
                 "totals": {"entries": 1, "created": 1}}
        cs = ChangeSet(block, Where(socket="/s"))
        self.assertEqual((cs.id, cs.state, cs.mode, cs.totals.created), (ID, "kept", "review", 1))
        self.assertEqual(cs.entries[0].kind, "created")
        self.assertIn("entries=1", repr(cs))
        empty = ChangeSet({"mode": "review", "recorded": True, "state": "empty", "entries": [], "totals": {}})
        self.assertIsNone(empty.id)
        for action in (empty.apply, empty.discard, empty.show, empty.diff):
            with self.assertRaises(tooljail.JailError) as cm:
                action()
            self.assertIn("kept no change set", str(cm.exception))

    def test_server_and_changes_dir_refused(self):
        with self.assertRaises(tooljail.JailError) as cm:
            tooljail.run(["true"], socket="/nonexistent/sock", changes="review", changes_dir="/tmp/x")
        self.assertIn("changes_dir", str(cm.exception))

    def test_patch_options(self):
        with self.assertRaises(ValueError):
            tooljail.patch_subprocess(changes="sometimes")


def has_changes_flag():
    if not support.BINARY:
        return False
    out = subprocess.run([support.BINARY, "run", "--help"], stdout=subprocess.PIPE,
                         stderr=subprocess.STDOUT, timeout=30).stdout
    return b"--changes" in out


def need_changes(case):
    if not has_changes_flag():
        return unittest.skip("this tooljail binary has no `run --changes` (set TOOLJAIL_BIN to one that has)")(case)
    return case


@support.need_binary
@need_changes
class TestChangesCLI(unittest.TestCase):
    """Real runs through the CLI: review leaves the workdir alone, apply
    writes what the command saw, discard drops it, a conflict applies
    nothing."""

    def setUp(self):
        self.scratch = support.Scratch()
        self.addCleanup(self.scratch.close)
        self.store = os.path.join(self.scratch.config, "changes")
        self.kw = dict(self.scratch.kw, changes="review", changes_dir=self.store, socket=None)
        os.environ.pop("TOOLJAIL_SERVER", None)
        with open(os.path.join(self.scratch.dir, "old.txt"), "w") as f:
            f.write("old\n")

    def run_review(self, script):
        return tooljail.run(["/bin/sh", "-c", script], cwd=self.scratch.dir, capture_output=True,
                            **self.kw)

    def read(self, name):
        with open(os.path.join(self.scratch.dir, name)) as f:
            return f.read()

    def test_review_then_apply(self):
        r = self.run_review("echo new > new.txt; echo changed > old.txt; cat new.txt")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(r.stdout, b"new\n")  # the command saw its own write
        cs = r.changes
        self.assertIsInstance(cs, ChangeSet)
        self.assertEqual((cs.mode, cs.state), ("review", "kept"))
        self.assertEqual(sorted((e.path, e.kind) for e in cs.entries), [("new.txt", "created"), ("old.txt", "modified")])
        self.assertFalse(os.path.exists(os.path.join(self.scratch.dir, "new.txt")))
        self.assertEqual(self.read("old.txt"), "old\n")
        self.assertIn("+changed", cs.diff())
        shown = cs.show()
        self.assertEqual(shown.id, cs.id)
        result = cs.apply()
        self.assertEqual(result.applied, 2)
        self.assertEqual((self.read("new.txt"), self.read("old.txt")), ("new\n", "changed\n"))

    def test_discard(self):
        r = self.run_review("echo x > gone.txt")
        r.changes.discard()
        self.assertFalse(os.path.exists(os.path.join(self.scratch.dir, "gone.txt")))
        with self.assertRaises(tooljail.JailError):
            r.changes.apply()

    def test_conflict_applies_nothing(self):
        r = self.run_review("echo mine > old.txt; echo more > other.txt")
        with open(os.path.join(self.scratch.dir, "old.txt"), "w") as f:
            f.write("theirs\n")
        with self.assertRaises(ChangesConflict) as cm:
            r.changes.apply()
        self.assertEqual([c.path for c in cm.exception.conflicts], ["old.txt"])
        self.assertIn("old.txt", str(cm.exception))
        self.assertEqual(self.read("old.txt"), "theirs\n")
        self.assertFalse(os.path.exists(os.path.join(self.scratch.dir, "other.txt")))
        r.changes.apply(force=True)
        self.assertEqual((self.read("old.txt"), self.read("other.txt")), ("mine\n", "more\n"))

    def test_change_set_by_id(self):
        r = self.run_review("echo later > later.txt")
        cs = tooljail.change_set(r.changes.id, changes_dir=self.store)
        self.assertEqual([e.path for e in cs.entries], ["later.txt"])
        cs.apply()
        self.assertEqual(self.read("later.txt"), "later\n")

    def test_check_error_carries_changes(self):
        with self.assertRaises(tooljail.CalledProcessError) as cm:
            tooljail.run(["/bin/sh", "-c", "echo half > half.txt; exit 3"], cwd=self.scratch.dir,
                         check=True, **dict(self.kw, changes="apply-on-success"))
        cs = cm.exception.changes
        self.assertEqual(cs.state, "kept")  # not applied: the command failed
        self.assertFalse(os.path.exists(os.path.join(self.scratch.dir, "half.txt")))
        cs.discard()

    def test_patch_subprocess(self):
        with tooljail.patch_subprocess(changes="review", changes_dir=self.store, **self.scratch.kw):
            p = subprocess.Popen(["/bin/sh", "-c", "echo patched > patched.txt"], cwd=self.scratch.dir)
            self.assertEqual(p.wait(), 0)
        self.assertEqual([e.path for e in p.changes.entries], ["patched.txt"])
        self.assertFalse(os.path.exists(os.path.join(self.scratch.dir, "patched.txt")))
        p.changes.apply()
        self.assertEqual(self.read("patched.txt"), "patched\n")

    def test_off_has_no_changes(self):
        r = tooljail.run(["true"], cwd=self.scratch.dir, **self.scratch.kw)
        self.assertIsNone(r.changes)


@support.need_binary
@need_changes
class TestChangesServer(unittest.TestCase):
    """The same through a real server: the set is kept in the server's store
    for this user, and apply/discard go through the server."""

    def setUp(self):
        if not support.serve_supported():
            self.skipTest("no tooljail serve")
        self.scratch = support.Scratch()
        self.addCleanup(self.scratch.close)
        served = [] if self.scratch.profile is None else ["--profile", self.scratch.profile]
        # The server's store in the scratch directory, not the host's.
        self.store = os.path.join(self.scratch.config, "server-changes")
        self.server = support.Server(self.scratch.config, "--changes-dir", self.store, *served)
        self.addCleanup(self.server.stop)
        with open(os.path.join(self.scratch.dir, "old.txt"), "w") as f:
            f.write("old\n")

    def run_review(self, script):
        return tooljail.run(["/bin/sh", "-c", script], cwd=self.scratch.dir, capture_output=True,
                            changes="review", socket=self.server.socket, **self.scratch.kw)

    def test_review_then_apply(self):
        r = self.run_review("echo new > new.txt")
        self.assertEqual(r.changes.where.socket, self.server.socket)
        # Kept by the server for this client: a root server's in uid-0.
        kept = os.path.join(self.store, "uid-0") if support.ROOT else self.store
        self.assertTrue(os.path.exists(os.path.join(kept, r.changes.id, "set.json")))
        self.assertEqual([e.path for e in r.changes.entries], ["new.txt"])
        self.assertFalse(os.path.exists(os.path.join(self.scratch.dir, "new.txt")))
        self.assertIn("+new", r.changes.diff())
        self.assertEqual(r.changes.apply().applied, 1)
        with open(os.path.join(self.scratch.dir, "new.txt")) as f:
            self.assertEqual(f.read(), "new\n")

    def test_conflict_then_discard(self):
        r = self.run_review("echo mine > old.txt")
        with open(os.path.join(self.scratch.dir, "old.txt"), "w") as f:
            f.write("theirs\n")
        with self.assertRaises(ChangesConflict) as cm:
            r.changes.apply()
        self.assertEqual([c.path for c in cm.exception.conflicts], ["old.txt"])
        r.changes.discard()
        with open(os.path.join(self.scratch.dir, "old.txt")) as f:
            self.assertEqual(f.read(), "theirs\n")


if __name__ == "__main__":
    unittest.main()
