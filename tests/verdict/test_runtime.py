"""How numpy runs in a process that computes Verdicts (assay.verdict.runtime): settings of the process,
so each check starts a fresh one."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
from assay.verdict.runtime import _glibc

# Four arrays of 3.2 MB made and freed, 50 times over, as each step of a "how many more" search does.
CHURN = """
import json, resource
import assay.verdict
import numpy as np
def faults(): return resource.getrusage(resource.RUSAGE_SELF).ru_minflt
[np.ones(400_000) for _ in range(4)]
before = faults()
for _ in range(50):
    arrays = [np.ones(400_000) for _ in range(4)]
    del arrays
print(json.dumps(faults() - before))
"""
PAGES = 4 * 400_000 * 8 // 4096  # faulted in afresh each time, when the freed memory is handed back


def page_faults(**env: str) -> int:
    clean = {k: v for k, v in os.environ.items() if not k.startswith(("MALLOC_", "GLIBC_TUNABLES"))}
    done = subprocess.run([sys.executable, "-c", CHURN], capture_output=True, text=True, env={**clean, **env},
                          check=True, timeout=60)
    return json.loads(done.stdout)


@pytest.mark.skipif(not _glibc(), reason="the allocator's thresholds are glibc's")
def test_memory_numpy_frees_is_kept_for_the_next_arrays() -> None:
    """Made and freed 50 times, the arrays fault their pages in once, not every time."""
    assert page_faults() < PAGES  # less than one round's pages over all 50 rounds


@pytest.mark.skipif(not _glibc(), reason="the allocator's thresholds are glibc's")
def test_a_users_own_allocator_settings_stand() -> None:
    """With the user's MALLOC_TOP_PAD_ (glibc's own default, 0), assay leaves the allocator alone:
    the freed arrays go back to the kernel as glibc does by default."""
    assert page_faults(MALLOC_TOP_PAD_="0") > 25 * PAGES


@pytest.mark.parametrize("chosen", [None, "2"])
def test_the_verdict_loads_numpy_with_one_blas_thread_unless_the_user_chose(chosen: str | None) -> None:
    """OpenBLAS's spinning threads cost ~0.1 s of CPU per Verdict-computing process (issue 39); the user's setting stands."""
    if chosen and (os.cpu_count() or 1) < 2:
        pytest.skip("needs 2 cores to see a second BLAS thread")
    code = ("import os, json\nimport assay.verdict\n"
            "print(json.dumps({'threads': len(os.listdir('/proc/self/task')), 'env': os.environ.get('OPENBLAS_NUM_THREADS')}))")
    env = {k: v for k, v in os.environ.items() if k not in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS")}
    if chosen:
        env["OPENBLAS_NUM_THREADS"] = chosen
    seen = json.loads(subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True, timeout=60).stdout)
    assert seen["env"] == chosen  # put back as it was: a Factory build or a session sees the user's environment
    assert seen["threads"] == (int(chosen) if chosen else 1)
