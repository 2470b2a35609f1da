"""Runs one untrusted Python program inside the bubblewrap sandbox (activities/sandbox/run-python.ts).

The worker starts this file, already inside the sandbox's namespaces and under an unprivileged
uid, and writes one JSON request on stdin: the program, its stdin, the caps and a nonce. This file
then, in order:

1. writes the nonce as the first line of stdout: the worker's proof that the sandbox came up and
   that what follows is the program's doing (the program cannot know the nonce before it runs);
2. sets the caps as hard rlimits, which the program cannot raise again: CPU seconds (SIGXCPU at
   the cap, SIGKILL a second later), address space, processes (threads included), file size, open
   files, no core files;
3. runs the program as `__main__` from /scratch/main.py, so tracebacks show its source lines.

An uncaught MemoryError exits with MEMORY_EXIT_CODE, which the worker reports as the memory cap.
Only the standard library is imported here, before the caps: what the program imports counts
against them.
"""

import io
import json
import os
import resource
import sys
import traceback

# Same value as MEMORY_EXIT_CODE in activities/sandbox/run-python.ts.
MEMORY_EXIT_CODE = 86
SCRATCH = "/scratch"


def set_caps(caps):
    """Hard and soft limits alike, except CPU: SIGXCPU first, so the worker can name the cap."""
    cpu = caps["cpuSeconds"]
    resource.setrlimit(resource.RLIMIT_CPU, (cpu, cpu + 1))
    for limit, value in (
        (resource.RLIMIT_AS, caps["memoryBytes"]),
        (resource.RLIMIT_NPROC, caps["processes"]),
        (resource.RLIMIT_FSIZE, caps["fileBytes"]),
        (resource.RLIMIT_NOFILE, caps["openFiles"]),
        (resource.RLIMIT_CORE, 0),
    ):
        resource.setrlimit(limit, (value, value))


def main():
    request = json.loads(sys.stdin.read())
    # The program gets its own stdin; the request (and its nonce) is not readable again.
    devnull = os.open(os.devnull, os.O_RDONLY)
    os.dup2(devnull, 0)
    os.close(devnull)
    sys.stdin = io.StringIO(request["stdin"])
    sys.stdout.write(request["nonce"] + "\n")
    sys.stdout.flush()

    path = os.path.join(SCRATCH, "main.py")
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(request["code"])
    set_caps(request["caps"])

    sys.argv = [path]
    sys.path.insert(0, SCRATCH)
    program = {"__name__": "__main__", "__file__": path, "__builtins__": __builtins__}
    try:
        exec(compile(request["code"], path, "exec"), program)
    except SystemExit:
        raise
    except BaseException as error:  # noqa: BLE001 - every failure of the program is its result
        # Leave this file's frame out: the program's traceback starts at its own code.
        traceback.print_exception(type(error), error, error.__traceback__.tb_next)
        if isinstance(error, MemoryError):
            sys.stderr.write("the sandbox's memory cap was reached\n")
            sys.stderr.flush()
            os._exit(MEMORY_EXIT_CODE)
        sys.exit(1)


if __name__ == "__main__":
    main()
