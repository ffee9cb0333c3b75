"""Malformed kubeconfigs, each derived from a working one (a simulator's), so only the named defect stands
between the command and the cluster: `write(name, good, directory)` → (path, words the one-line error must say)."""

from __future__ import annotations

import base64
import copy
import stat
from collections.abc import Callable
from pathlib import Path

import yaml

NOT_A_CERT = base64.b64encode(b"-----BEGIN CERTIFICATE-----\nbm90IGEgY2VydA==\n-----END CERTIFICATE-----\n").decode()


def _doc(mutate: Callable[[dict, Path], None]) -> Callable[[dict, Path], str]:
    def build(good: dict, directory: Path) -> str:
        doc = copy.deepcopy(good)
        mutate(doc, directory)
        return yaml.safe_dump(doc, sort_keys=False)
    return build


def _text(text: str) -> Callable[[dict, Path], str]:
    return lambda good, directory: text


def _cluster(doc: dict) -> dict:
    return doc["clusters"][0]["cluster"]


def _user(doc: dict) -> dict:
    return doc["users"][0]["user"]


def _missing_cluster(doc: dict, _: Path) -> None:
    doc["contexts"][0]["context"]["cluster"] = "nowhere"


def _missing_user(doc: dict, _: Path) -> None:
    doc["contexts"][0]["context"]["user"] = "nobody"


def _no_contexts(doc: dict, _: Path) -> None:
    doc["contexts"] = []


def _current_missing(doc: dict, _: Path) -> None:
    doc["current-context"] = "gone"


def _ca_bad_base64(doc: dict, _: Path) -> None:
    _cluster(doc)["certificate-authority-data"] = "%%% not base64 %%%"


def _ca_not_a_cert(doc: dict, _: Path) -> None:
    _cluster(doc)["certificate-authority-data"] = base64.b64encode(b"hello, I am not a certificate").decode()


def _client_cert_bad_base64(doc: dict, _: Path) -> None:
    _user(doc)["client-certificate-data"] = "!!!"


def _client_cert_not_a_cert(doc: dict, _: Path) -> None:
    _user(doc)["client-certificate-data"] = NOT_A_CERT


def _ca_file_unreadable(doc: dict, directory: Path) -> None:
    ca = directory / "ca-is-a-directory"
    ca.mkdir(exist_ok=True)  # unreadable as a file even for root (chmod 000 is not)
    _cluster(doc).pop("certificate-authority-data", None)
    _cluster(doc)["certificate-authority"] = str(ca)


def _exec_missing(doc: dict, _: Path) -> None:
    doc["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": "kubelogin-nope"}}


def _exec_fails(doc: dict, directory: Path) -> None:
    plugin = directory / "failing-plugin"
    plugin.write_text("#!/bin/sh\necho 'error: token expired; run login' >&2\necho 'second line' >&2\nexit 4\n")
    plugin.chmod(plugin.stat().st_mode | stat.S_IXUSR)
    doc["users"][0]["user"] = {"exec": {"apiVersion": "client.authentication.k8s.io/v1", "command": str(plugin)}}


def _cert_and_key_mismatch(doc: dict, directory: Path) -> None:
    from taudash.sim.tls import make_cert

    (directory / "a").mkdir(exist_ok=True)
    (directory / "b").mkdir(exist_ok=True)
    cert, other = make_cert(directory / "a"), make_cert(directory / "b")
    _user(doc)["client-certificate-data"] = base64.b64encode(cert.pem()).decode()
    _user(doc)["client-key-data"] = base64.b64encode(other.key.read_bytes()).decode()  # another certificate's key


def _server_not_a_url(doc: dict, _: Path) -> None:
    _cluster(doc)["server"] = "localhost"


# name → (how to build the file's text from the good kubeconfig, what the error line must say)
SHAPES: dict[str, tuple[Callable[[dict, Path], str], str]] = {
    "invalid YAML": (_text("apiVersion: v1\nclusters: [\n"), "invalid YAML"),
    "a scalar": (_text("just some words\n"), "expected a kubeconfig"),
    "a list": (_text("- name: a\n- name: b\n"), "expected a kubeconfig"),
    "an empty file": (_text(""), "no contexts (the file is empty)"),
    "no contexts": (_doc(_no_contexts), "no contexts"),
    "current-context missing": (_doc(_current_missing), "current-context 'gone' is not among its contexts"),
    "context names a missing cluster": (_doc(_missing_cluster), "names cluster 'nowhere', which is not in"),
    "context names a missing user": (_doc(_missing_user), "names user 'nobody', which is not in"),
    "CA data bad base64": (_doc(_ca_bad_base64), "certificate-authority-data is not valid base64"),
    "CA data not a certificate": (_doc(_ca_not_a_cert), "certificate-authority-data is not a PEM certificate"),
    "client cert bad base64": (_doc(_client_cert_bad_base64), "client-certificate-data is not valid base64"),
    "client cert not a certificate": (_doc(_client_cert_not_a_cert),
                                      "client-certificate-data is not a PEM certificate"),
    "client cert and key do not match": (_doc(_cert_and_key_mismatch),
                                         "the certificate or key cannot be loaded: KEY_VALUES_MISMATCH"),
    "CA file unreadable": (_doc(_ca_file_unreadable), "certificate-authority"),
    "exec plugin missing": (_doc(_exec_missing), "exec plugin command 'kubelogin-nope' not found on PATH"),
    "exec plugin fails": (_doc(_exec_fails), "failed (exit 4): error: token expired; run login"),
    "server not a URL": (_doc(_server_not_a_url), "server 'localhost' is not an http(s) URL"),
}


def write(name: str, good: dict, directory: Path) -> tuple[Path, str]:
    """The malformed kubeconfig `name` in `directory` (0600, as kubeconfigs are), and what its error must say."""
    build, says = SHAPES[name]
    directory.mkdir(parents=True, exist_ok=True)
    path = directory / "kubeconfig"
    path.write_text(build(good, directory))
    path.chmod(0o600)
    return path, says
