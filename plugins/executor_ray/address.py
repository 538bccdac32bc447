"""Where the Ray cluster's head is, and whether it answers, asked before an Experiment is recorded.

Ray's own connection (``ray.init``) retries an address that doesn't answer for about twelve
minutes, printing each retry on the user's stderr from its C++ client, and ends in an error the
run can only record as "errored". So the coordinator asks first, in seconds: a TCP connection to
the head's port, then Ray's handshake (the cluster's id, which a head with token authentication
refuses a wrong or missing ``RAY_AUTH_TOKEN``) in a process of its own, whose output is kept.
"""

from __future__ import annotations

import os
import socket
import subprocess
import sys

from assay.hooks.protocols import ExecutorOptions, ExecutorUnreachable

CONNECT_TIMEOUT = 5.0  # seconds the head's port has to take a connection
HANDSHAKE_TIMEOUT = 20.0  # seconds the head has to answer as a Ray head
AUTO = "auto"  # Ray's own search for a cluster started on this host
_HANDSHAKE = """\
import sys
from ray._raylet import GcsClient
try:
    GcsClient(address=sys.argv[1])
except Exception as e:
    print(f"{type(e).__name__}: {e}")
    sys.exit(1)
"""


def head_address(options: ExecutorOptions) -> tuple[str, str]:
    """The head's address and what gave it (the flag, the User config's field, or ``RAY_ADDRESS``)."""
    if options.address:
        return options.address, options.given_by
    if os.environ.get("RAY_ADDRESS"):
        return os.environ["RAY_ADDRESS"], "RAY_ADDRESS"
    return AUTO, "--ray-address"


def reach(options: ExecutorOptions) -> None:
    """Raise :class:`ExecutorUnreachable`, one line naming what gave the address, the address and
    why, unless a Ray head answers there."""
    from ray._common.network_utils import parse_address
    from ray._private import services

    address, given_by = head_address(options)
    if address == AUTO:
        try:
            resolved = services.canonicalize_bootstrap_address_or_die(AUTO)
        except ConnectionError as e:
            found = "no Ray cluster was started on this host" if "Could not find" in str(e) else str(e)
            raise ExecutorUnreachable(f"--ray-address not given (nor [executor] address, nor RAY_ADDRESS) and {found}; "
                                      "give the head's HOST:PORT (docs/distributed.md)") from None
        where = f"the Ray cluster found on this host ({resolved})"
    else:
        parsed = parse_address(address)
        if parsed is None or not parsed[0] or not parsed[1].isdigit():
            raise ExecutorUnreachable(f"{given_by} {address}: not HOST:PORT")
        resolved = services.canonicalize_bootstrap_address(address)
        where = f"{given_by} {address}" + (f" (as {resolved})" if resolved != address else "")
    host, port = parse_address(resolved)
    try:
        socket.create_connection((host, int(port)), timeout=CONNECT_TIMEOUT).close()
    except OSError as e:
        why = f"no answer within {CONNECT_TIMEOUT:g} s" if isinstance(e, TimeoutError) else (e.strerror or str(e)).lower()
        raise ExecutorUnreachable(f"{where}: no Ray head answers there ({why})") from None
    try:
        done = subprocess.run([sys.executable, "-I", "-c", _HANDSHAKE, resolved], capture_output=True, text=True,
                              timeout=HANDSHAKE_TIMEOUT)
    except subprocess.TimeoutExpired:
        raise ExecutorUnreachable(f"{where}: it takes connections but gave no Ray head's answer within "
                                  f"{HANDSHAKE_TIMEOUT:g} s") from None
    if done.returncode != 0:
        said = (done.stdout.strip().splitlines() or done.stderr.strip().splitlines() or [f"exit {done.returncode}"])[-1]
        if "Authentication" in said:
            raise ExecutorUnreachable(f"{where}: the Ray head refused this coordinator ({said}); the coordinator's "
                                      "RAY_AUTH_TOKEN must be the cluster's")
        raise ExecutorUnreachable(f"{where}: no Ray head answers there ({said})")
