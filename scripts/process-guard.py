# Runs a command for replicated-postgres.mjs (`python3 process-guard.py command args...`), so that
# nothing the cluster starts outlives it:
# - SIGTERM and SIGINT go on to the command, and when the process that started this one dies
#   without stopping the cluster (a test runner killed), the command gets SIGTERM too;
# - it is a child subreaper: Patroni starts each postmaster in a session of its own and leaves
#   it, so the postmaster and its backends would become children of PID 1, which in a container
#   may never reap them (killed, they would stay as zombies). They become children of this
#   process instead, and are reaped.
# Exits once no child is left, with the command's exit status.
import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1
PR_SET_CHILD_SUBREAPER = 36
libc = ctypes.CDLL(None, use_errno=True)
for option in (PR_SET_PDEATHSIG, PR_SET_CHILD_SUBREAPER):
    if libc.prctl(option, signal.SIGTERM if option == PR_SET_PDEATHSIG else 1) != 0:
        sys.exit('process-guard: prctl failed: ' + os.strerror(ctypes.get_errno()))
if os.getppid() == 1:
    sys.exit('process-guard: the process that started it is gone already')

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
