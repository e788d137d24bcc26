"""The Kubernetes library's configuration loading and transport, without the rest of the library.

fitguard sends raw JSON (kube/client.py) and uses three parts of the `kubernetes` package: the
kubeconfig and in-cluster loaders (`kubernetes.config`), `Configuration` and the REST client's
connection pool (`kubernetes.client.rest.RESTClientObject`). But the package's `__init__` imports
every subpackage (dynamic, watch, stream, utils with its YAML creation helpers, leaderelection,
informer), and `kubernetes.config.kube_config` imports `ApiClient`, whose module imports pydantic
and the models package: about 15 MB of the controller's memory that nothing reads (kubernetes
37.0.1: `kubernetes/__init__.py`, `kubernetes/config/kube_config.py`, `kubernetes/client/
api_client.py`; `kubernetes/client/__init__.py` itself loads its names lazily).

So the two packages whose `__init__` pulls the rest in (`kubernetes`, `kubernetes.utils`) are
registered bare (found on the path, their `__init__` not yet run) before the light submodules are
imported. A bare package completes itself the first time anything asks it for a name it does not
have (`from kubernetes import watch`): its `__init__` runs then, so other code in the process (the
test harness's client) sees the whole library as before. `kube_config` takes `ApiClient` by name for
`new_client_from_config`, which fitguard never calls: while it is imported, `kubernetes.client`
lends it a function that loads the real class when called, and takes the loan back after.
"""

from __future__ import annotations

import importlib.machinery
import importlib.util
import sys
import threading
from types import ModuleType
from typing import Any

# outermost first: a package is found on its parent's path
_BARE = ("kubernetes", "kubernetes.utils")
_lock = threading.RLock()


def _deferred_api_client(*args: Any, **kwargs: Any) -> Any:
    """`kubernetes.client.ApiClient(...)` for kube_config.new_client_from_config."""
    complete("kubernetes")
    return importlib.import_module("kubernetes.client.api_client").ApiClient(*args, **kwargs)


def complete(name: str) -> ModuleType:
    """A bare package with its `__init__` run (every bare package, so each sees the others whole);
    the module as it is when it is already whole."""
    with _lock:
        for bare in _BARE:
            module = sys.modules.get(bare)
            if module is not None and module.__dict__.pop("__getattr__", None) is not None:
                spec = module.__spec__
                assert spec is not None and spec.loader is not None
                spec.loader.exec_module(module)
    return sys.modules[name]


def _bare_package(name: str) -> ModuleType:
    parent = name.rpartition(".")[0]
    path = sys.modules[parent].__path__ if parent else None
    spec = importlib.machinery.PathFinder.find_spec(name, path)
    if spec is None or spec.loader is None:
        raise ImportError(f"{name} not found", name=name)
    module = importlib.util.module_from_spec(spec)

    def __getattr__(attr: str) -> Any:  # PEP 562: only for names the module does not have
        if attr.startswith("__"):
            raise AttributeError(attr)
        whole = complete(name)
        try:
            return whole.__dict__[attr]
        except KeyError:
            raise AttributeError(f"module {name!r} has no attribute {attr!r}") from None

    module.__getattr__ = __getattr__  # type: ignore[method-assign]
    sys.modules[name] = module
    if parent:
        setattr(sys.modules[parent], name.rpartition(".")[2], module)
    return module


def _load() -> tuple[Any, Any, Any]:
    with _lock:
        if "kubernetes" not in sys.modules:
            for name in _BARE:
                _bare_package(name)
        # by module name: `from package import submodule` would first ask the bare package for the
        # name (hasattr), which completes it
        configuration = importlib.import_module("kubernetes.client.configuration")
        rest = importlib.import_module("kubernetes.client.rest")
        if "kubernetes.config.kube_config" in sys.modules:
            return configuration.Configuration, rest.RESTClientObject, sys.modules["kubernetes.config"]
        client = sys.modules["kubernetes.client"]
        lent = "ApiClient" not in client.__dict__
        if lent:
            setattr(client, "ApiClient", _deferred_api_client)  # noqa: B010  (a module's attribute)
        try:
            config = importlib.import_module("kubernetes.config")
        finally:
            if lent:
                delattr(client, "ApiClient")
    return configuration.Configuration, rest.RESTClientObject, config


Configuration, RESTClientObject, config = _load()
ConfigException = config.ConfigException
