"""Streaming to a collector never blocks or breaks the program, and loses nothing while the disk has
room: a collector that stalls (accepts and never reads) or goes away mid-run gets the stream up to
where it stopped, and the local file the rest, from a copy of the Hello on (output_sink.h). With
neither GAPWATCH_SOCKET nor GAPWATCH_OUTPUT set, a collector of this user's at the default socket
gets the stream; a default socket in a directory others can write to is not trusted."""
import os
import socket
import stat
import subprocess
import tempfile
import threading
import time
import unittest

import gwtest

STORM = os.path.join(gwtest.BUILD, "bin", "launch_storm")
STEADY = os.path.join(gwtest.BUILD, "bin", "steady_launcher")


def batches_in(path):
    """({batch sequence: api calls + device activities}, goodbye or None) of a recording, read up
    to its last whole frame."""
    r = subprocess.run([gwtest.GAPWATCH, "dump", "--json", path], capture_output=True, text=True, timeout=120)
    import json
    evs = [json.loads(l) for l in r.stdout.splitlines() if l.strip()]
    batches = {e["sequence"]: e["api_calls"] + e["activities"] for e in evs if e["type"] == "batch"}
    goodbye = next((e for e in evs if e["type"] == "goodbye"), None)
    return batches, goodbye


def events_in(path):
    """(api calls + device activities, goodbye or None) of a recording, read up to its last whole frame."""
    batches, goodbye = batches_in(path)
    return sum(batches.values()), goodbye


def as_recording(stream_bytes, d, name):
    path = os.path.join(d, name)
    with open(path, "wb") as f:
        f.write(gwtest.file_header() + stream_bytes)
    return path


class Listener:
    """A Unix socket server: `mode` "stall" accepts and never reads (until drain()), "vanish"
    reads the first chunk and closes."""

    def __init__(self, path, mode):
        self.path, self.mode, self.received = path, mode, bytearray()
        self.server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        self.server.bind(path)
        self.server.listen(4)
        self.conn = None
        self.thread = threading.Thread(target=self.serve)
        self.thread.start()

    def serve(self):
        self.conn, _ = self.server.accept()
        if self.mode == "vanish":
            self.received.extend(self.conn.recv(64))
            self.conn.close()
        elif self.mode == "read":
            while True:
                chunk = self.conn.recv(65536)
                if not chunk:
                    break
                self.received.extend(chunk)

    def drain(self):
        """What a stalled collector had in its socket buffer, read once the program is gone."""
        self.thread.join(60)
        if self.mode == "stall" and self.conn:
            self.conn.setblocking(False)
            while True:
                try:
                    chunk = self.conn.recv(65536)
                except BlockingIOError:
                    break
                if not chunk:
                    break
                self.received.extend(chunk)
        if self.conn:
            self.conn.close()
        self.server.close()
        return bytes(self.received)


class CollectorStream(unittest.TestCase):
    def test_a_stalled_collector_gets_what_it_took_and_the_file_the_rest(self):
        with tempfile.TemporaryDirectory() as d:
            sock, out = os.path.join(d, "c.sock"), os.path.join(d, "rest.gwt")
            listener = Listener(sock, "stall")
            # A few MB of stream: far more than a socket buffer holds.
            r = gwtest.run([STORM, "4", "40000", "2000", "1000"], gwtest.gapwatch_env("preload", out, {"GAPWATCH_SOCKET": sock}),
                           cwd=d, timeout=300)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("stopped taking the stream", r.stderr)
            taken = listener.drain()
            in_socket, _ = batches_in(as_recording(taken, d, "taken.gwt"))
            in_file, goodbye = batches_in(out)
            self.assertIsNotNone(goodbye, "the file ends with Goodbye")
            self.assertGreater(sum(in_file.values()), 0)
            # Goodbye counts what was handed to the socket or the file whole; both together have it
            # all, and nothing was lost in transport (a full ring on a busy machine is another
            # matter, counted apart, and not this test's). The batches the stalled collector had
            # in its socket but had not read when the stream moved are in both (the library cannot
            # know whether it will ever read them): the same batches, by sequence number.
            for seq in set(in_socket) & set(in_file):
                self.assertEqual(in_socket[seq], in_file[seq], seq)
            union = {**in_socket, **in_file}
            self.assertEqual(sorted(union), list(range(len(union))), "every batch, none missing")
            self.assertEqual(sum(union.values()), goodbye["api_calls"] + goodbye["activities"])
            self.assertFalse([d for d in goodbye["drops"] if d["source"] == "transport" and d["dropped"]], goodbye)

    def test_a_collector_that_goes_away_leaves_the_rest_to_the_file(self):
        with tempfile.TemporaryDirectory() as d:
            sock, out = os.path.join(d, "c.sock"), os.path.join(d, "rest.gwt")
            listener = Listener(sock, "vanish")
            r = gwtest.run([STEADY, "8", "20"], gwtest.gapwatch_env("preload", out, {"GAPWATCH_SOCKET": sock}), cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            self.assertIn("went away", r.stderr)
            listener.drain()
            in_file, goodbye = events_in(out)
            self.assertIsNotNone(goodbye)
            # The collector read the Hello only: every event is in the file.
            self.assertEqual(in_file, goodbye["api_calls"] + goodbye["activities"])
            self.assertGreaterEqual(goodbye["activities"], 8)

    def test_the_default_socket_is_used_when_nothing_is_named(self):
        with tempfile.TemporaryDirectory() as d:
            runtime = os.path.join(d, "run")
            os.makedirs(os.path.join(runtime, "gapwatch"), mode=0o700)
            os.chmod(os.path.join(runtime, "gapwatch"), 0o700)
            listener = Listener(os.path.join(runtime, "gapwatch", "collector.sock"), "read")
            env = gwtest.gapwatch_env("preload", None, {"XDG_RUNTIME_DIR": runtime})
            r = gwtest.run([STEADY, "3", "20"], env, cwd=d)
            self.assertEqual(r.returncode, 0, r.stderr)
            n, goodbye = events_in(as_recording(listener.drain(), d, "got.gwt"))
            self.assertIsNotNone(goodbye, r.stderr)
            self.assertEqual(n, goodbye["api_calls"] + goodbye["activities"])
            self.assertFalse([f for f in os.listdir(d) if f.endswith(".gwt") and f != "got.gwt"], "no local file")

    def test_a_default_socket_others_can_reach_is_not_trusted(self):
        with tempfile.TemporaryDirectory() as d:
            runtime = os.path.join(d, "run")
            os.makedirs(os.path.join(runtime, "gapwatch"))
            os.chmod(os.path.join(runtime, "gapwatch"), 0o777)
            sock = os.path.join(runtime, "gapwatch", "collector.sock")
            server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            server.bind(sock)
            server.listen(1)
            try:
                env = gwtest.gapwatch_env("preload", None, {"XDG_RUNTIME_DIR": runtime})
                r = gwtest.run([STEADY, "2", "20"], env, cwd=d)
                self.assertEqual(r.returncode, 0, r.stderr)
                files = [f for f in os.listdir(d) if f.endswith(".gwt")]
                self.assertEqual(len(files), 1, "the recording went to the local file: %s" % r.stderr)
            finally:
                server.close()


if __name__ == "__main__":
    gwtest.main(__name__)
