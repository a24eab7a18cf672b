#!/usr/bin/env python3
"""A logging stdio relay for chassis's integration tests (stdlib only).

    log_proxy.py LOGFILE -- CMD [ARGS...]

Spawns CMD with piped stdio and relays, line by line:
  our stdin   -> CMD's stdin, each line also appended to LOGFILE (flushed
                 per line), so a test can assert from the server's side which
                 requests (e.g. `tools/call`) actually arrived;
  CMD stdout  -> our stdout;
  CMD stderr  -> our stderr.
When our stdin closes, CMD's stdin is closed. SIGTERM and SIGINT are
forwarded to CMD. Exits with CMD's exit status (128+N if CMD died of
signal N; 127 if CMD could not be started).
"""

import os
import signal
import subprocess
import sys
import threading


def usage():
    sys.stderr.write("usage: log_proxy.py LOGFILE -- CMD [ARGS...]\n")
    sys.exit(2)


def pump_stdin(child, log):
    try:
        for line in sys.stdin.buffer:
            log.write(line if line.endswith(b"\n") else line + b"\n")
            log.flush()
            try:
                child.stdin.write(line)
                child.stdin.flush()
            except (BrokenPipeError, ValueError, OSError):
                break
    finally:
        try:
            child.stdin.close()
        except (BrokenPipeError, OSError):
            pass


def pump(src, dst):
    try:
        for line in src:
            try:
                dst.write(line)
                dst.flush()
            except (BrokenPipeError, OSError):
                break
    except (ValueError, OSError):
        pass


def main(argv):
    if len(argv) < 4 or argv[2] != "--":
        usage()
    log_path, cmd = argv[1], argv[3:]
    log = open(log_path, "ab")
    try:
        child = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, bufsize=0
        )
    except OSError as exc:
        sys.stderr.write(f"log_proxy: cannot start {cmd[0]!r}: {exc}\n")
        sys.exit(127)

    def forward(signum, _frame):
        try:
            child.send_signal(signum)
        except ProcessLookupError:
            pass

    signal.signal(signal.SIGTERM, forward)
    signal.signal(signal.SIGINT, forward)

    # stdin is a daemon thread: it may sit in a read after the child is gone.
    threading.Thread(target=pump_stdin, args=(child, log), daemon=True).start()
    out = threading.Thread(target=pump, args=(child.stdout, sys.stdout.buffer))
    err = threading.Thread(target=pump, args=(child.stderr, sys.stderr.buffer))
    out.start()
    err.start()

    code = child.wait()
    # a grandchild holding the pipes open must not keep us alive forever
    out.join(timeout=5)
    err.join(timeout=5)
    log.flush()
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(128 - code if code < 0 else code)


if __name__ == "__main__":
    main(sys.argv)
