"""`fitguard controller --once`: the cache filled from one list of the API or from a state file, the
books built from it by the same listeners as the long-running controller's, and one discovery cycle
(controller/cycle.py) run on them. The long-running controller runs the same reconciler from its
watched cache (controller/manager.py)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from controller.books import Books
from controller.cache import ClusterCache
from controller.compose import aws_clients, kube_client
from controller.cycle import DiscoveryReconciler, Note
from controller.report import CycleReport
from controller.settings import ControllerOptions

if TYPE_CHECKING:
    from controller.aws.clients import AwsClients
    from controller.scaling import ScalingDriver
    from kube.client import ApiLike

__all__ = ["ControllerOptions", "run_once"]


def run_once(
    options: ControllerOptions,
    *,
    clients: AwsClients | None = None,
    api: ApiLike | None = None,
    facts: Callable[[str], Any] | None = None,
    note: Note | None = None,
    driver: ScalingDriver | None = None,
) -> CycleReport:
    """One cycle: its report, with the scaling plan and its scale-ups when a `driver` is given.
    `clients` are the process's (controller/compose.py); left None, they are built for this cycle."""
    if facts is None:
        from capacity.instances import lookup as facts
    cache = ClusterCache(options.cache())
    books = Books(cache, options.books())  # listening before the cache is filled
    _fill(cache, options, api)
    made = clients or aws_clients(options.region)
    cycle = DiscoveryReconciler(cache, books, options, lambda: made, facts=facts, driver=driver, note=note)
    return cycle.reconcile()


def _fill(cache: ClusterCache, options: ControllerOptions, api: ApiLike | None) -> None:
    if options.state:
        from kube.statefile import by_kind, load_state

        cache.fill(by_kind(load_state(options.state)))
    else:
        cache.list_from(api if api is not None else kube_client(options.kubeconfig, options.context))
