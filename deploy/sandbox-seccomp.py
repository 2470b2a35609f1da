"""Compiles the sandbox's seccomp filter (issue 33) to a BPF file bubblewrap loads with --seccomp.

Run by deploy/sandbox-venv.sh with the sandbox venv's python: libseccomp (through pyseccomp)
resolves syscall names for this machine's architecture and makes calls of any other architecture
(x32, i386 through int 0x80) kill the process. Everything a computation needs stays allowed; what
the sandbox has no use for and the kernel's attack surface lives in is refused with EPERM:
namespaces (the entry point of most container escapes), mounts, ptrace and cross-process memory,
the key store, BPF, perf events, kernel modules, kexec, reboot, swap, clocks. clone3 answers
ENOSYS, so libc falls back to clone, whose namespace flags are checked (clone3 passes its flags in
memory a filter cannot read). Usage: python sandbox-seccomp.py OUTPUT
"""

import errno
import sys

import pyseccomp as seccomp

REFUSED = [
    # namespaces and mounts
    "unshare", "setns", "mount", "umount2", "pivot_root", "chroot", "mount_setattr",
    "fsopen", "fsconfig", "fsmount", "fspick", "move_mount", "open_tree",
    # other processes
    "ptrace", "process_vm_readv", "process_vm_writev", "kcmp", "pidfd_getfd",
    # kernel facilities
    "keyctl", "add_key", "request_key", "bpf", "perf_event_open", "userfaultfd",
    "init_module", "finit_module", "delete_module", "kexec_load", "kexec_file_load",
    "reboot", "swapon", "swapoff", "acct", "quotactl", "syslog", "lookup_dcookie",
    "open_by_handle_at", "name_to_handle_at", "iopl", "ioperm", "vhangup",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex",
]

# clone(2) flags that make a namespace (linux/sched.h).
NAMESPACE_FLAGS = {
    "CLONE_NEWNS": 0x00020000,
    "CLONE_NEWCGROUP": 0x02000000,
    "CLONE_NEWUTS": 0x04000000,
    "CLONE_NEWIPC": 0x08000000,
    "CLONE_NEWUSER": 0x10000000,
    "CLONE_NEWPID": 0x20000000,
    "CLONE_NEWNET": 0x40000000,
}


def build() -> seccomp.SyscallFilter:
    filt = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
    for name in REFUSED:
        try:
            filt.add_rule(seccomp.ERRNO(errno.EPERM), name)
        except Exception:  # not a syscall of this architecture or libseccomp version
            continue
    for flag in NAMESPACE_FLAGS.values():
        filt.add_rule(seccomp.ERRNO(errno.EPERM), "clone", seccomp.Arg(0, seccomp.MASKED_EQ, flag, flag))
    filt.add_rule(seccomp.ERRNO(errno.ENOSYS), "clone3")
    return filt


if __name__ == "__main__":
    with open(sys.argv[1], "wb") as out:
        build().export_bpf(out)
