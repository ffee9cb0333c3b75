"""The Kubernetes client library keeps a descriptor open on each temp file it writes for inline kubeconfig
certificate data; `closing_library_descriptors` closes those and nothing else (engine/sources/library_files.py)."""

from __future__ import annotations

import os
import sys
import tempfile

import pytest
from kubernetes_asyncio.config import kube_config

from taudash.engine.sources.library_files import close_descriptors_of, closing_library_descriptors

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="descriptors listed from /proc")


def is_open(fd: int) -> bool:
    try:
        os.fstat(fd)
    except OSError:
        return False
    return True


def test_the_descriptors_the_library_left_open_are_closed_and_its_files_kept(tmp_path, monkeypatch):
    cache: dict[str, str] = {"earlier": str(tmp_path / "earlier")}
    (tmp_path / "earlier").write_text("x")
    earlier = os.open(tmp_path / "earlier", os.O_RDONLY)  # known before the load: not the load's to close
    monkeypatch.setattr(kube_config, "_temp_files", cache)
    unrelated = open(tmp_path / "mine.txt", "w")  # noqa: SIM115 - kept open across the load on purpose
    with closing_library_descriptors():
        fd, name = tempfile.mkstemp(dir=tmp_path)  # as the library does, and never closes
        cache["certificate"] = name
        also = os.open(name, os.O_RDONLY)
    assert not is_open(fd) and not is_open(also)
    assert os.path.exists(name)  # the library reads it by path later, and removes it at exit
    assert is_open(earlier) and not unrelated.closed and is_open(unrelated.fileno())
    unrelated.close()
    os.close(earlier)


def test_closing_by_path_matches_the_file_not_its_name(tmp_path):
    (tmp_path / "a").write_text("a")
    os.link(tmp_path / "a", tmp_path / "b")  # the same file under another name
    fd = os.open(tmp_path / "b", os.O_RDONLY)
    keep = os.open(tmp_path, os.O_RDONLY)
    assert close_descriptors_of([str(tmp_path / "a"), str(tmp_path / "gone")]) == 1
    assert not is_open(fd) and is_open(keep)
    os.close(keep)
