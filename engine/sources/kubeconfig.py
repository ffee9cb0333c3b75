"""A kubeconfig checked before the client library reads it: every malformed shape is one `ConfigError`.

The library indexes whatever YAML it is given and decodes credentials as it goes, so a scalar, an
empty file or bad base64 would surface as a TypeError or binascii.Error deep inside it. Here the
file(s) are read the way kubectl merges them (every existing file of the colon-separated list;
the first of each name wins; the first current-context wins) and the context taudash will use is
resolved and checked: its cluster (an http(s) server; CA data that decodes to a certificate; a
readable CA file) and its user (certificate/key data that decode; readable files; an exec plugin
whose command exists). What only the library can do (running the exec plugin, loading the
certificate and key as a pair) is checked by `connect`, which words those failures too.
"""

from __future__ import annotations

import base64
import binascii
import os
import shutil
import ssl
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import urlparse

import yaml


class ConfigError(Exception):
    """The kubeconfig or context is unusable: bad input (one line naming the file and the part)."""


@dataclass
class Kubeconfig:
    """The merged files: named entries (name → (entry, the file it came from)) in file order."""

    path: str  # as given (may be a colon-separated list)
    clusters: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    users: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    contexts: dict[str, tuple[dict[str, Any], Path]] = field(default_factory=dict)
    current: str | None = None

    def fail(self, why: str) -> ConfigError:
        return ConfigError(f"kubeconfig {self.path}: {why}")


@dataclass(frozen=True)
class Resolved:
    """The context taudash connects with, checked."""

    context: str
    cluster: str
    user: str  # "" when the context names none (anonymous)
    exec_command: str | None  # the exec plugin's command, when the user has one
    namespace: str = ""  # the context's namespace ("": none named; kubectl then uses "default")


def existing_files(path: str) -> list[str]:
    return [p for p in path.split(os.pathsep) if p and Path(p).expanduser().exists()]


def read(path: str) -> Kubeconfig:
    """Every existing file of `path`, parsed and merged; ConfigError for a shape the library would choke on."""
    files = existing_files(path)
    if not files:
        raise ConfigError(f"kubeconfig {path}: no such file (use --kubeconfig or KUBECONFIG, or try `taudash demo`)")
    merged = Kubeconfig(path)
    empty = True
    for name in files:
        file = Path(name).expanduser()
        doc = _load(file)
        empty = empty and not doc
        if merged.current is None and isinstance(doc.get("current-context"), str) and doc["current-context"]:
            merged.current = doc["current-context"]
        for section, inner in (("clusters", "cluster"), ("users", "user"), ("contexts", "context")):
            entries = doc.get(section)
            if entries is None:
                continue
            if not isinstance(entries, list):
                raise ConfigError(f"kubeconfig {file}: {section} must be a list, not {_kind(entries)}")
            into = getattr(merged, section)
            for i, entry in enumerate(entries):
                if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"]:
                    raise ConfigError(f"kubeconfig {file}: {section}[{i}] must be a mapping with a name")
                body = entry.get(inner)
                if body is None:
                    body = {}
                if not isinstance(body, dict):
                    raise ConfigError(f"kubeconfig {file}: {section}[{i}] ({entry['name']}): "
                                      f"{inner} must be a mapping, not {_kind(body)}")
                into.setdefault(entry["name"], (body, file))
    if not merged.contexts:
        raise merged.fail("no contexts (the file is empty)" if empty else "no contexts")
    return merged


def context_names(path: str) -> list[str]:
    """Every context of the kubeconfig, in file order."""
    return list(read(path).contexts)


def resolve(path: str, context: str | None) -> Resolved:
    """The context to connect with (named, else the current one), its cluster and user checked."""
    kc = read(path)
    known = ", ".join(sorted(kc.contexts))
    if context is not None and context not in kc.contexts:
        raise kc.fail(f"context {context!r} is not in the kubeconfig (known: {known})")
    name = context or kc.current
    if name is None:
        raise kc.fail(f"no current-context: name one with --context (known: {known})")
    if name not in kc.contexts:
        raise kc.fail(f"current-context {name!r} is not among its contexts (known: {known})")
    ctx, _ = kc.contexts[name]
    cluster_name, user_name = ctx.get("cluster"), ctx.get("user") or ""
    if not isinstance(cluster_name, str) or not cluster_name:
        raise kc.fail(f"context {name!r} names no cluster")
    if cluster_name not in kc.clusters:
        raise kc.fail(f"context {name!r} names cluster {cluster_name!r}, which is not in the kubeconfig")
    if not isinstance(user_name, str):
        raise kc.fail(f"context {name!r}: user must be a name, not {_kind(user_name)}")
    if user_name and user_name not in kc.users:
        raise kc.fail(f"context {name!r} names user {user_name!r}, which is not in the kubeconfig")
    cluster, cluster_file = kc.clusters[cluster_name]
    _check_cluster(kc, cluster_name, cluster, cluster_file.parent)
    command = None
    if user_name:
        user, user_file = kc.users[user_name]
        command = _check_user(kc, user_name, user, user_file.parent)
    namespace = ctx.get("namespace")
    return Resolved(name, cluster_name, user_name, command, namespace if isinstance(namespace, str) else "")


def _load(file: Path) -> dict[str, Any]:
    try:
        text = file.read_text(encoding="utf-8")
    except UnicodeDecodeError:
        raise ConfigError(f"kubeconfig {file}: not UTF-8 text") from None
    except OSError as exc:
        raise ConfigError(f"kubeconfig {file}: cannot read: {exc.strerror or exc}") from None
    try:
        doc = yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        where = f" (line {mark.line + 1}, column {mark.column + 1})" if mark is not None else ""
        what = getattr(exc, "problem", None) or str(exc).splitlines()[0]
        raise ConfigError(f"kubeconfig {file}: invalid YAML: {what[:120]}{where}") from None
    if doc is None:
        return {}
    if not isinstance(doc, dict):
        raise ConfigError(f"kubeconfig {file}: expected a kubeconfig (a mapping with clusters, contexts and "
                          f"users), found {_kind(doc)}")
    return doc


def _check_cluster(kc: Kubeconfig, name: str, cluster: dict[str, Any], base: Path) -> None:
    where = f"cluster {name!r}"
    server = cluster.get("server")
    if not isinstance(server, str) or not server:
        raise kc.fail(f"{where} has no server")
    url = urlparse(server)
    if url.scheme not in ("http", "https") or not url.netloc:
        raise kc.fail(f"{where}: server {server[:80]!r} is not an http(s) URL")
    if cluster.get("certificate-authority-data"):
        _certificate(kc, f"{where}: certificate-authority-data", _base64(kc, f"{where}: certificate-authority-data",
                                                                        cluster["certificate-authority-data"]))
    elif cluster.get("certificate-authority"):
        _certificate(kc, f"{where}: certificate-authority", _file(kc, f"{where}: certificate-authority",
                                                                  cluster["certificate-authority"], base))


def _check_user(kc: Kubeconfig, name: str, user: dict[str, Any], base: Path) -> str | None:
    where = f"user {name!r}"
    if user.get("client-certificate-data"):
        _certificate(kc, f"{where}: client-certificate-data",
                     _base64(kc, f"{where}: client-certificate-data", user["client-certificate-data"]))
    elif user.get("client-certificate"):
        _certificate(kc, f"{where}: client-certificate",
                     _file(kc, f"{where}: client-certificate", user["client-certificate"], base))
    if user.get("client-key-data"):
        key = _base64(kc, f"{where}: client-key-data", user["client-key-data"])
        if b"PRIVATE KEY-----" not in key:
            raise kc.fail(f"{where}: client-key-data is not a PEM private key")
    elif user.get("client-key"):
        _file(kc, f"{where}: client-key", user["client-key"], base)
    if user.get("tokenFile"):
        _file(kc, f"{where}: tokenFile", user["tokenFile"], base)
    if "token" in user and not isinstance(user["token"], str):
        raise kc.fail(f"{where}: token must be a string, not {_kind(user['token'])}")
    plugin = user.get("exec")
    if plugin is None:
        return None
    if not isinstance(plugin, dict):
        raise kc.fail(f"{where}: exec must be a mapping, not {_kind(plugin)}")
    command = plugin.get("command")
    if not isinstance(command, str) or not command:
        raise kc.fail(f"{where}: exec names no command")
    if not plugin.get("apiVersion"):
        raise kc.fail(f"{where}: exec plugin {command!r} has no apiVersion")
    args = plugin.get("args")
    if args is not None and not isinstance(args, list):
        raise kc.fail(f"{where}: exec args must be a list, not {_kind(args)}")
    env = plugin.get("env")
    if env is not None and not (isinstance(env, list) and all(isinstance(e, dict) and "name" in e and "value" in e
                                                              for e in env)):
        raise kc.fail(f"{where}: exec env must be a list of {{name, value}}")
    # The library runs the command as given (a bare name from PATH); kubectl's "relative to the file"
    # does not apply to it, so neither is it looked up there.
    found = shutil.which(command) if os.sep not in command else (command if os.access(command, os.X_OK) else None)
    if found is None:
        missing = not Path(command).exists() if os.sep in command else True
        raise kc.fail(f"{where}: exec plugin command {command!r} "
                      + (("not found" + ("" if os.sep in command else " on PATH")) if missing else "is not executable"))
    return command


def _base64(kc: Kubeconfig, where: str, value: Any) -> bytes:
    if not isinstance(value, str):
        raise kc.fail(f"{where} must be base64 text, not {_kind(value)}")
    try:
        return base64.b64decode("".join(value.split()), validate=True)
    except (binascii.Error, ValueError):
        raise kc.fail(f"{where} is not valid base64") from None


def _file(kc: Kubeconfig, where: str, value: Any, base: Path) -> bytes:
    if not isinstance(value, str):
        raise kc.fail(f"{where} must be a file name, not {_kind(value)}")
    path = (base / Path(value).expanduser()) if not Path(value).expanduser().is_absolute() else Path(value).expanduser()
    try:
        return path.read_bytes()
    except OSError as exc:
        raise kc.fail(f"{where} {path}: cannot read: {exc.strerror or exc}") from None


def _certificate(kc: Kubeconfig, where: str, data: bytes) -> None:
    """PEM certificate(s), as the TLS layer will load them (a CA bundle or a client certificate)."""
    try:
        text = data.decode("ascii")
        ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT).load_verify_locations(cadata=text)
    except (UnicodeDecodeError, ssl.SSLError, ValueError):
        raise kc.fail(f"{where} is not a PEM certificate") from None


def _kind(value: Any) -> str:
    return {dict: "a mapping", list: "a list", str: "a string", bool: "a boolean", int: "a number",
            float: "a number", type(None): "nothing"}.get(type(value), type(value).__name__)

