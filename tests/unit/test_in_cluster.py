"""In a Pod with no kubeconfig, taudash connects as its ServiceAccount (kubectl's rule); anywhere a kubeconfig
or a context is named, never."""

from __future__ import annotations

import asyncio

import pytest

from taudash.engine.sources import client


@pytest.fixture
def pod(tmp_path, monkeypatch):
    folder = tmp_path / "sa"
    folder.mkdir()
    (folder / "token").write_text("abc")
    (folder / "namespace").write_text("taudash")
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("KUBERNETES_SERVICE_HOST", "10.0.0.1")
    monkeypatch.setenv("KUBERNETES_SERVICE_PORT", "443")
    monkeypatch.setenv("TAUDASH_SERVICEACCOUNT_DIR", str(folder))
    return folder


def test_a_pod_without_a_kubeconfig_uses_its_service_account(pod):
    assert client.in_cluster_dir(None, None) == pod


def test_a_named_kubeconfig_context_or_home_kubeconfig_wins(pod, tmp_path, monkeypatch):
    assert client.in_cluster_dir(None, str(tmp_path / "kc")) is None
    assert client.in_cluster_dir("prod", None) is None
    monkeypatch.setenv("KUBECONFIG", str(tmp_path / "kc"))
    assert client.in_cluster_dir(None, None) is None
    monkeypatch.delenv("KUBECONFIG")
    (tmp_path / "home" / ".kube").mkdir(parents=True)
    (tmp_path / "home" / ".kube" / "config").write_text("{}")
    assert client.in_cluster_dir(None, None) is None


def test_outside_a_pod_or_without_a_token_file_no_in_cluster(pod, monkeypatch):
    (pod / "token").unlink()
    assert client.in_cluster_dir(None, None) is None
    (pod / "token").write_text("abc")
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST")
    assert client.in_cluster_dir(None, None) is None


def test_an_empty_token_or_missing_ca_is_one_config_error(pod):
    with pytest.raises(client.ConfigError, match=r"in-cluster ServiceAccount .*: Cert|ca") as missing_ca:
        asyncio.run(client.connect(None, None))
    assert "\n" not in str(missing_ca.value)
    (pod / "token").write_text("")
    with pytest.raises(client.ConfigError, match="Token file exists but empty"):
        asyncio.run(client.connect(None, None))
