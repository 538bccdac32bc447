"""How numpy runs in a process that computes Verdicts: one BLAS thread, freed memory kept for reuse.

Both are settings of the process the Verdict's code lives in, made once before numpy first loads
(:func:`prepare`, from ``assay.verdict``'s import). Neither changes a result, bit for bit: the
fixed-seed checks in tests/verdict pass unchanged.
"""

import ctypes
import os

_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD = -1, -3  # glibc's <malloc.h>
_USERS_MALLOC = ("MALLOC_TRIM_THRESHOLD_", "MALLOC_MMAP_THRESHOLD_", "MALLOC_TOP_PAD_", "GLIBC_TUNABLES")


def prepare() -> None:
    _import_numpy_with_one_blas_thread()
    _keep_freed_memory_for_reuse()


def _import_numpy_with_one_blas_thread() -> None:
    """Load numpy's OpenBLAS with one thread unless the user chose otherwise, and leave the environment as it was.

    OpenBLAS starts a thread per core when it loads, and they spin: about 0.1 s of CPU in every
    process that computes a Verdict (half of a short ``assay experiment``'s imports), for matrices
    of a few thousand numbers that one thread multiplies faster. One thread also sums in one fixed
    order on every machine. The variable is read once, at load, so it is put back at once: a Factory
    build or a session started later gets the user's environment unchanged.
    """
    if "OPENBLAS_NUM_THREADS" in os.environ:
        import numpy  # noqa: F401  # the user's choice stands
        return
    os.environ["OPENBLAS_NUM_THREADS"] = "1"
    try:
        import numpy  # noqa: F401
    finally:
        del os.environ["OPENBLAS_NUM_THREADS"]


def _keep_freed_memory_for_reuse() -> None:
    """Have glibc keep the memory numpy frees for the next array instead of handing it back at once.

    The "how many more" searches simulate 4,000 futures 100 tasks at a time: each step makes and
    frees a dozen arrays of about 3 MB. glibc returns each to the kernel as it is freed (its
    trim threshold follows the largest freed block), and the next array faults every page in
    again: a third of the looks simulation's CPU went to those faults (benchmarks/bench_looks.py,
    15 suites: 3.0 s with 367,000 page faults, 1.8 s with 13,700 with these thresholds; the
    process's peak memory the same, 72 MB). Up to 64 MB freed at the heap's top is kept. Not on
    other C libraries, and not where the user tuned glibc's allocator themselves.
    """
    if not _glibc() or any(name in os.environ for name in _USERS_MALLOC):
        return
    mallopt = ctypes.CDLL(None).mallopt
    mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # setting either fixes both: the pair is set together
    mallopt(_M_TRIM_THRESHOLD, 64 << 20)


def _glibc() -> bool:
    try:
        return (os.confstr("CS_GNU_LIBC_VERSION") or "").startswith("glibc")
    except (ValueError, OSError):  # a C library without the name (musl, macOS)
        return False
