"""The seccomp filter every Trial runs under: a default-deny allowlist of system calls.

As Docker's default profile and Flatpak do, a Trial may make only the system calls an agent's
tools need (files, memory, processes and threads, signals, time, pipes and sockets, System V
and POSIX IPC); any other fails with ENOSYS, as on a kernel without it, so a program falls back
(glibc's ``clone3`` → ``clone``, libuv's io_uring → its thread pool). The kernel surface an agent
has no business with is refused with EPERM by name (:data:`REFUSED`): io_uring (whose
``IORING_OP_SOCKET`` makes sockets no ``socket()`` rule sees), the key-management calls, eBPF,
perf events, userfaultfd, kexec and modules, the mount family, new namespaces, clocks and more.
Some calls are allowed only with safe arguments:

- ``socket``/``socketpair`` for AF_UNIX, AF_INET and AF_INET6 only (any other family, AF_VSOCK to
  the hypervisor past every network namespace, AF_NETLINK, AF_ALG, AF_PACKET…, fails with
  EAFNOSUPPORT, as on a kernel built without it);
- ``clone`` without a namespace flag (``clone3``, whose flags sit in memory a filter can't read,
  gets ENOSYS and glibc falls back to ``clone``);
- ``personality`` to query or to set only the harmless Linux personas (not
  ``ADDR_NO_RANDOMIZE``, ``READ_IMPLIES_EXEC``…);
- ``keyctl`` only to join a fresh, empty, anonymous session keyring, which the relay does
  first, so no Trial reaches the host's session keyring or another Trial's.

Only this machine's own ABI is allowed: a 32-bit or x32 system call fails with ENOSYS.

The filter is built with libseccomp (through ``pyseccomp``, its ctypes binding), which knows each
architecture's system-call numbers, and exported as the classic BPF program bwrap loads
(``--seccomp FD``) after setting no_new_privs, so it binds the relay and everything it starts.
"""

from __future__ import annotations

import errno
import functools
import socket
import tempfile
from types import ModuleType

# What an agent's tools use (git, Python, Node, npm, the agent CLIs, test runners, compilers).
ALLOWED = (
    # files and descriptors
    "read", "write", "readv", "writev", "pread64", "pwrite64", "preadv", "pwritev", "preadv2", "pwritev2",
    "open", "openat", "openat2", "creat", "close", "close_range", "lseek", "_llseek",
    "stat", "fstat", "lstat", "newfstatat", "fstatat64", "stat64", "fstat64", "lstat64", "statx",
    "statfs", "fstatfs", "statfs64", "fstatfs64", "access", "faccessat", "faccessat2",
    "readlink", "readlinkat", "getdents", "getdents64", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat",
    "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "mknod", "mknodat",
    "chmod", "fchmod", "fchmodat", "fchmodat2", "chown", "fchown", "lchown", "fchownat",
    "truncate", "ftruncate", "fallocate", "fsync", "fdatasync", "sync", "syncfs", "sync_file_range",
    "utime", "utimes", "futimesat", "utimensat", "dup", "dup2", "dup3", "fcntl", "flock", "ioctl",
    "pipe", "pipe2", "sendfile", "splice", "tee", "vmsplice", "copy_file_range", "readahead", "fadvise64",
    "getcwd", "chdir", "fchdir", "umask", "memfd_create", "cachestat",
    "getxattr", "lgetxattr", "fgetxattr", "setxattr", "lsetxattr", "fsetxattr", "listxattr", "llistxattr",
    "flistxattr", "removexattr", "lremovexattr", "fremovexattr",
    "inotify_init", "inotify_init1", "inotify_add_watch", "inotify_rm_watch",
    "poll", "ppoll", "select", "pselect6", "epoll_create", "epoll_create1", "epoll_ctl", "epoll_wait",
    "epoll_pwait", "epoll_pwait2", "eventfd", "eventfd2", "signalfd", "signalfd4",
    "timerfd_create", "timerfd_settime", "timerfd_gettime",
    "io_setup", "io_destroy", "io_submit", "io_cancel", "io_getevents", "io_pgetevents",  # POSIX AIO
    # memory
    "brk", "mmap", "munmap", "mremap", "mprotect", "madvise", "mincore", "msync", "remap_file_pages",
    "mlock", "mlock2", "munlock", "mlockall", "munlockall", "membarrier", "map_shadow_stack",
    "pkey_alloc", "pkey_free", "pkey_mprotect", "get_mempolicy", "set_mempolicy", "mbind",
    # processes, threads and signals (the PID namespace confines kill, ptrace and pidfds)
    "fork", "vfork", "execve", "execveat", "exit", "exit_group", "wait4", "waitid",
    "kill", "tkill", "tgkill", "rt_sigqueueinfo", "rt_tgsigqueueinfo", "pidfd_open", "pidfd_send_signal",
    "pidfd_getfd", "ptrace", "process_vm_readv", "process_vm_writev",
    "rt_sigaction", "rt_sigprocmask", "rt_sigreturn", "rt_sigpending", "rt_sigsuspend", "rt_sigtimedwait",
    "sigaltstack", "pause", "restart_syscall",
    "getpid", "getppid", "gettid", "getpgid", "setpgid", "getpgrp", "getsid", "setsid",
    "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getgroups",
    "setuid", "setgid", "setreuid", "setregid", "setresuid", "setresgid", "setgroups", "setfsuid", "setfsgid",
    "capget", "capset", "prctl", "arch_prctl", "seccomp",  # seccomp and landlock can only narrow
    "landlock_create_ruleset", "landlock_add_rule", "landlock_restrict_self",
    "set_tid_address", "set_robust_list", "get_robust_list", "futex", "futex_waitv", "rseq",
    "sched_yield", "sched_getaffinity", "sched_setaffinity", "sched_getparam", "sched_setparam",
    "sched_getscheduler", "sched_setscheduler", "sched_get_priority_max", "sched_get_priority_min",
    "sched_rr_get_interval", "sched_getattr", "sched_setattr", "getpriority", "setpriority",
    "ioprio_get", "ioprio_set", "getrlimit", "setrlimit", "prlimit64", "getrusage", "times",
    "uname", "sysinfo", "getcpu", "getrandom",
    # time
    "nanosleep", "clock_nanosleep", "clock_gettime", "clock_getres", "gettimeofday", "time",
    "alarm", "getitimer", "setitimer", "timer_create", "timer_settime", "timer_gettime",
    "timer_getoverrun", "timer_delete",
    # sockets (which families: below)
    "bind", "connect", "listen", "accept", "accept4", "getsockname", "getpeername", "sendto", "recvfrom",
    "sendmsg", "recvmsg", "sendmmsg", "recvmmsg", "shutdown", "setsockopt", "getsockopt",
    # System V and POSIX IPC (the Trial's own IPC namespace)
    "shmget", "shmat", "shmdt", "shmctl", "semget", "semop", "semtimedop", "semctl",
    "msgget", "msgsnd", "msgrcv", "msgctl", "mq_open", "mq_unlink", "mq_timedsend", "mq_timedreceive",
    "mq_notify", "mq_getsetattr",
)
# Refused by name, with EPERM: kernel surface no agent needs, each a known way past a sandbox's walls.
REFUSED = (
    "io_uring_setup", "io_uring_enter", "io_uring_register",
    "add_key", "request_key",  # keyctl: only to join a fresh keyring (below)
    "bpf", "perf_event_open", "userfaultfd", "kexec_load", "kexec_file_load",
    "init_module", "finit_module", "delete_module", "create_module", "query_module", "get_kernel_syms",
    "mount", "umount", "umount2", "pivot_root", "chroot", "move_mount", "open_tree", "fsopen", "fsconfig",
    "fsmount", "fspick", "mount_setattr", "unshare", "setns",
    "swapon", "swapoff", "reboot", "acct", "quotactl", "quotactl_fd", "nfsservctl", "lookup_dcookie",
    "settimeofday", "clock_settime", "clock_adjtime", "adjtimex", "stime", "sethostname", "setdomainname",
    "iopl", "ioperm", "modify_ldt", "vm86", "vm86old", "uselib", "ustat", "sysfs", "_sysctl", "syslog",
    "open_by_handle_at", "name_to_handle_at", "fanotify_init", "kcmp", "vhangup",
)
FAMILIES = (socket.AF_UNIX, socket.AF_INET, socket.AF_INET6)
NAMESPACE_FLAGS = 0x7E020000  # CLONE_NEWNS | NEWCGROUP | NEWUTS | NEWIPC | NEWUSER | NEWPID | NEWNET
# personality(2) values that keep every protection: PER_LINUX, PER_LINUX32, UNAME26 with either, and a query.
PERSONAS = (0x0, 0x8, 0x20000, 0x20008, 0xFFFFFFFF)
KEYCTL_JOIN_SESSION_KEYRING = 1


def _library() -> ModuleType | None:
    try:
        import pyseccomp  # loads libseccomp.so.2; absent or unloadable on some machines
    except (ImportError, OSError):
        return None
    return pyseccomp


def supported() -> bool:
    """Whether a filter can be built here (libseccomp is installed and knows this architecture)."""
    return _program() is not None


def why_not() -> str:
    """Why there is no filter here (for ``assay sandbox check``)."""
    if _library() is None:
        return "libseccomp is not installed (apt-get install libseccomp2)"
    return "libseccomp can't build a filter for this architecture"


def program() -> bytes:
    """The filter for this machine, as bwrap reads it from ``--seccomp FD``."""
    built = _program()
    if built is None:
        raise RuntimeError(f"no seccomp filter: {why_not()}")
    return built


def keyctl_number() -> int | None:
    """``keyctl``'s system-call number here, for the relay (glibc has no wrapper for it)."""
    lib = _library()
    number = lib.resolve_syscall(lib.Arch.NATIVE, "keyctl") if lib is not None else -1
    return number if number >= 0 else None


def allowed_here() -> list[str]:
    """The system calls the filter allows on this machine (some only with the arguments above)."""
    lib = _library()
    names = (*ALLOWED, "socket", "socketpair", "clone", "personality", "keyctl")
    return sorted(n for n in names if lib is not None and lib.resolve_syscall(lib.Arch.NATIVE, n) >= 0)


def describe() -> str:
    """One line on the filter in force, for ``assay sandbox check``."""
    return (f"allowlist of {len(allowed_here())} system calls, any other ENOSYS; io_uring, keyctl, bpf, "
            "perf_event_open, userfaultfd, kexec, modules, mount, namespaces refused; "
            "socket() for unix, inet and inet6 only")


@functools.cache
def _program() -> bytes | None:
    lib = _library()
    if lib is None:
        return None
    try:
        rules = lib.SyscallFilter(lib.ERRNO(errno.ENOSYS))
        rules.set_attr(lib.Attr.ACT_BADARCH, lib.ERRNO(errno.ENOSYS))  # 32-bit and x32 calls
        _add(lib, rules)
        with tempfile.TemporaryFile() as out:
            rules.export_bpf(out)
            out.seek(0)
            return out.read()
    except OSError:  # libseccomp refused this architecture
        return None


def _add(lib: ModuleType, rules: object) -> None:
    """Every rule of the filter; names this libseccomp doesn't know (newer calls) stay at ENOSYS."""
    def known(name: str) -> bool:
        return lib.resolve_syscall(lib.Arch.NATIVE, name) >= 0

    allow, refuse = lib.ALLOW, lib.ERRNO(errno.EPERM)
    for name in filter(known, ALLOWED):
        rules.add_rule(allow, name)
    for name in filter(known, REFUSED):
        rules.add_rule(refuse, name)
    for name in ("socket", "socketpair"):
        for family in FAMILIES:
            rules.add_rule(allow, name, lib.Arg(0, lib.EQ, family))
        no_family = lib.ERRNO(errno.EAFNOSUPPORT)
        for family in range(max(FAMILIES)):
            if family not in FAMILIES:
                rules.add_rule(no_family, name, lib.Arg(0, lib.EQ, family))
        rules.add_rule(no_family, name, lib.Arg(0, lib.GT, max(FAMILIES)))
    rules.add_rule(allow, "clone", lib.Arg(0, lib.MASKED_EQ, NAMESPACE_FLAGS, 0))
    for flag in (1 << bit for bit in range(32) if NAMESPACE_FLAGS >> bit & 1):
        rules.add_rule(refuse, "clone", lib.Arg(0, lib.MASKED_EQ, flag, flag))
    for persona in PERSONAS:
        rules.add_rule(allow, "personality", lib.Arg(0, lib.MASKED_EQ, 0xFFFFFFFF, persona))  # an unsigned int
    rules.add_rule(allow, "keyctl", lib.Arg(0, lib.EQ, KEYCTL_JOIN_SESSION_KEYRING), lib.Arg(1, lib.EQ, 0))
    rules.add_rule(refuse, "keyctl", lib.Arg(0, lib.GT, KEYCTL_JOIN_SESSION_KEYRING))
    rules.add_rule(refuse, "keyctl", lib.Arg(0, lib.LT, KEYCTL_JOIN_SESSION_KEYRING))
    rules.add_rule(refuse, "keyctl", lib.Arg(0, lib.EQ, KEYCTL_JOIN_SESSION_KEYRING), lib.Arg(1, lib.NE, 0))
