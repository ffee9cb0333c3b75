"""The parts of kubernetes_asyncio taudash uses, imported without the ~800 generated models and API classes.

taudash uses the library for credentials and transport only: `Configuration`, `ApiClient.call_api` with
raw answers (`_preload_content=False`, never a model), and `config.load_kube_config` and its in-cluster
loader. The library's package `__init__`s import every generated API class and model (about 110 ms of a
~550 ms `taudash status`), and `api_client.py` imports the models package for the deserialiser taudash
never calls. `load()` registers the three packages (`kubernetes_asyncio`, `.client`, `.client.models`)
as lazy stand-ins: their sub-modules import as usual from the real folders, and the first attribute a
stand-in does not have runs the package's real `__init__` into it, so any code that wants
`client.CoreV1Api` or a model still gets it (decision 172). Nothing is patched when the library is
already imported.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
import threading
import types
from pathlib import Path
from typing import Any

_PACKAGES = ("kubernetes_asyncio", "kubernetes_asyncio.client", "kubernetes_asyncio.client.models")
_PACKAGE_CONSTANTS = ("__all__", "__version__", "__project__")  # set by the real `__init__`s
_lock = threading.RLock()


class _LazyPackage(types.ModuleType):
    """A package whose `__init__` runs at the first attribute it lacks (a sub-module is imported alone)."""

    def __init__(self, name: str, folder: Path) -> None:
        super().__init__(name)
        init = folder / "__init__.py"
        self.__file__ = str(init)
        self.__path__ = [str(folder)]
        self.__package__ = name
        self.__spec__ = importlib.util.spec_from_file_location(name, init, submodule_search_locations=[str(folder)])
        self.__dict__["_lazy_state"] = "stub"

    def __getattr__(self, attr: str) -> Any:
        dunder = attr.startswith("__") and attr not in _PACKAGE_CONSTANTS  # what the import system probes
        if dunder or self.__dict__.get("_lazy_state") != "stub":
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}")
        folder = Path(self.__path__[0])
        if (folder / f"{attr}.py").is_file() or (folder / attr / "__init__.py").is_file():
            return importlib.import_module(f"{self.__name__}.{attr}")  # a sub-module: no full load
        self._load_in_full()
        try:
            return self.__dict__[attr]
        except KeyError:
            raise AttributeError(f"module {self.__name__!r} has no attribute {attr!r}") from None

    def _load_in_full(self) -> None:
        with _lock:
            if self.__dict__.get("_lazy_state") != "stub":
                return
            self.__dict__["_lazy_state"] = "loading"
            source = Path(str(self.__file__)).read_text(encoding="utf-8")
            exec(compile(source, str(self.__file__), "exec"), self.__dict__)  # noqa: S102 - the library's own file
            self.__dict__["_lazy_state"] = "full"


def is_lazy(module: types.ModuleType) -> bool:
    """Whether `module` is a stand-in whose real `__init__` has not run (tests)."""
    return isinstance(module, _LazyPackage) and module.__dict__.get("_lazy_state") == "stub"


def load() -> Any:
    """`kubernetes_asyncio.client` with `Configuration` and `ApiClient` set, the rest on demand."""
    with _lock:
        if "kubernetes_asyncio.client" not in sys.modules:
            spec = importlib.util.find_spec("kubernetes_asyncio")
            if spec is None or spec.origin is None:  # pragma: no cover - a declared dependency
                raise ImportError("kubernetes_asyncio is not installed")
            root = Path(spec.origin).parent
            stand_ins = [_LazyPackage(name, root.joinpath(*name.split(".")[1:])) for name in _PACKAGES]
            for module in stand_ins:
                sys.modules.setdefault(module.__name__, module)
            top, client, models = (sys.modules[name] for name in _PACKAGES)
            top.__dict__.setdefault("client", client)
            client.__dict__.setdefault("models", models)
            try:
                from kubernetes_asyncio.client.api_client import ApiClient
                from kubernetes_asyncio.client.configuration import Configuration
            except BaseException:
                for module in stand_ins:  # leave the import system as it was found
                    if sys.modules.get(module.__name__) is module:
                        del sys.modules[module.__name__]
                raise
            client.__dict__.setdefault("ApiClient", ApiClient)
            client.__dict__.setdefault("Configuration", Configuration)
        return sys.modules["kubernetes_asyncio.client"]
