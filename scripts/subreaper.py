# Runs a command (`python3 subreaper.py command args...`) as a child subreaper, for
# replicated-postgres.mjs: Patroni starts each postmaster in a session of its own and leaves it,
# so the postmaster and its backends would become children of PID 1, which in a container may
# never reap them (killed, they would stay as zombies). Here they become this process's children
# instead, and are reaped. SIGTERM and SIGINT go on to the command. Exits once no child is left,
# with the command's exit status.
import ctypes
import os
import signal
import sys

PR_SET_CHILD_SUBREAPER = 36
if ctypes.CDLL(None, use_errno=True).prctl(PR_SET_CHILD_SUBREAPER, 1) != 0:
    sys.exit('subreaper: prctl(PR_SET_CHILD_SUBREAPER) failed: ' + os.strerror(ctypes.get_errno()))

command = os.fork()
if command == 0:
    os.execvp(sys.argv[1], sys.argv[1:])


def pass_on(signum, _frame):
    try:
        os.kill(command, signum)
    except ProcessLookupError:
        pass


signal.signal(signal.SIGTERM, pass_on)
signal.signal(signal.SIGINT, pass_on)

status = 0
while True:
    try:
        pid, wait_status = os.wait()
    except ChildProcessError:
        break
    if pid == command:
        status = os.waitstatus_to_exitcode(wait_status)
sys.exit(status if status >= 0 else 128 - status)
