# Runs argv under a real pseudo-terminal, types Ctrl-C once the file $READY exists (never when READY is empty), prints li's exit code.
import os, pty, select, sys, time

ready = os.environ["READY"]
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])

def drain(timeout):
    r, _, _ = select.select([fd], [], [], timeout)
    if r:
        try:
            return os.read(fd, 65536)
        except OSError:
            return None
    return b""

deadline = time.time() + 30
while ready and not os.path.exists(ready):
    if time.time() > deadline:
        sys.exit("ready file never appeared")
    drain(0.02)
if ready:
    os.write(fd, b"\x03")
while True:
    chunk = drain(0.1)
    if chunk is None:
        break
    if chunk == b"":
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            print(os.waitstatus_to_exitcode(status))
            sys.exit(0)
_, status = os.waitpid(pid, 0)
print(os.waitstatus_to_exitcode(status))
