"""The Kubernetes client library's temp files for inline kubeconfig data, without their open descriptors.

kubernetes_asyncio writes each kubeconfig's inline certificate data (`certificate-authority-data`,
`client-certificate-data`, `client-key-data`) to a temp file of its own (`tempfile.mkstemp`), reads it
back by path, and keeps the descriptor mkstemp opened, unclosed, for the rest of the process: one per
distinct certificate. A process that connects to many clusters, or to a cluster whose certificates
rotate, collects them for as long as it runs (the test suite, which starts a simulator with a new
certificate authority per test, reached a thousand). `closing_library_descriptors()` closes those
descriptors around a kubeconfig load; the files stay (the library caches them by content and removes
them at exit).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

DESCRIPTOR_DIRS = ("/proc/self/fd", "/dev/fd")


def _library_temp_files() -> dict[str, str]:
    try:
        from kubernetes_asyncio.config import kube_config
    except ImportError:  # pragma: no cover - a dependency
        return {}
    files = getattr(kube_config, "_temp_files", None)  # content -> path (the library's own cache)
    return files if isinstance(files, dict) else {}


@contextmanager
def closing_library_descriptors() -> Iterator[None]:
    """Around loading a kubeconfig: afterwards, close the descriptors left open on temp files the
    library created meanwhile (nothing else: a descriptor is matched to a new file by device and inode)."""
    known = set(_library_temp_files().values())
    try:
        yield
    finally:
        created = [p for p in _library_temp_files().values() if p not in known]
        if created:
            close_descriptors_of(created)


def close_descriptors_of(paths: list[str]) -> int:
    """Close every descriptor of this process open on one of `paths`; returns how many were closed."""
    wanted = set()
    for p in paths:
        try:
            st = os.stat(p)
        except OSError:
            continue
        wanted.add((st.st_dev, st.st_ino))
    listing = next((d for d in DESCRIPTOR_DIRS if os.path.isdir(d)), None)
    if not wanted or listing is None:
        return 0
    closed = 0
    for name in os.listdir(listing):
        try:
            fd = int(name)
            st = os.fstat(fd)
        except (ValueError, OSError):  # the listing's own descriptor, closed by now
            continue
        if (st.st_dev, st.st_ino) in wanted:
            os.close(fd)
            closed += 1
    return closed
