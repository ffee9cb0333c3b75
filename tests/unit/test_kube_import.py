"""The client library imported in part (engine/sources/kube_import.py): the parts taudash uses without the
generated models, and the whole library still there for code that asks for more. Each case runs in a fresh
interpreter: the test process may hold the library already, and then nothing is made lazy."""

from __future__ import annotations

import json
import subprocess
import sys

_PROBE = """
import json, sys
from taudash.engine.sources import kube_import
client = kube_import.load()
seen = {"lazy": kube_import.is_lazy(client), "config": client.Configuration.__name__,
        "api_client": client.ApiClient.__name__,
        "models": sorted(m for m in sys.modules if m.startswith("kubernetes_asyncio.client.models."))}
from kubernetes_asyncio.config import kube_config  # the kubeconfig loader imports beside the stand-ins
seen["loader"] = kube_config.KubeConfigLoader.__name__
seen["models_after_config"] = len([m for m in sys.modules if m.startswith("kubernetes_asyncio.client.models.")])
%s
print(json.dumps(seen))
"""


def _probe(more: str = "") -> dict:
    done = subprocess.run([sys.executable, "-c", _PROBE % more], capture_output=True, text=True, check=True)
    return json.loads(done.stdout.splitlines()[-1])


def test_load_gives_the_transport_without_any_generated_model():
    seen = _probe()
    assert (seen["config"], seen["api_client"], seen["loader"]) == ("Configuration", "ApiClient", "KubeConfigLoader")
    assert seen["lazy"] is True
    assert seen["models"] == [] and seen["models_after_config"] == 0


def test_asking_for_a_generated_class_loads_the_real_package():
    seen = _probe("""
from kubernetes_asyncio import client as c
seen["core"] = c.CoreV1Api.__name__
seen["pod"] = c.models.V1Pod.__name__
seen["lazy_after"] = kube_import.is_lazy(c)
import kubernetes_asyncio
seen["version"] = kubernetes_asyncio.__version__
from kubernetes_asyncio.watch import Watch
seen["watch"] = Watch.__name__
""")
    assert (seen["core"], seen["pod"], seen["watch"]) == ("CoreV1Api", "V1Pod", "Watch")
    assert seen["lazy_after"] is False and seen["version"]


def test_an_attribute_the_library_lacks_is_still_an_attribute_error():
    seen = _probe("""
from kubernetes_asyncio import client as c
try:
    c.NoSuchThing
except AttributeError as exc:
    seen["error"] = str(exc)
""")
    assert seen["error"] == "module 'kubernetes_asyncio.client' has no attribute 'NoSuchThing'"


def test_nothing_is_made_lazy_when_the_library_is_already_imported():
    done = subprocess.run([sys.executable, "-c", """
import json, sys
import kubernetes_asyncio.client
from taudash.engine.sources import kube_import
client = kube_import.load()
print(json.dumps({"same": client is sys.modules["kubernetes_asyncio.client"], "lazy": kube_import.is_lazy(client)}))
"""], capture_output=True, text=True, check=True)
    assert json.loads(done.stdout.splitlines()[-1]) == {"same": True, "lazy": False}
