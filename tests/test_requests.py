"""Pod effective requests follow the scheduler: containers, init and sidecar init containers,
pod-level resources and overhead."""

import pytest

from capacity.quantity import QuantityError, parse_quantity
from capacity.requests import pod_requests


def c(name: str = "c", restart: str | None = None, **requests: str) -> dict:
    container: dict = {"name": name, "resources": {"requests": dict(requests)}}
    if restart:
        container["restartPolicy"] = restart
    return container


def q(text: str) -> int:
    return parse_quantity(text)


def test_regular_containers_are_summed() -> None:
    spec = {"containers": [c(cpu="100m", memory="1Gi"), c(cpu="250m")]}
    assert pod_requests(spec) == {"cpu": 350, "memory": q("1Gi")}


def test_an_init_container_larger_than_the_containers_wins() -> None:
    spec = {"containers": [c(cpu="100m")], "initContainers": [c(cpu="2")]}
    assert pod_requests(spec)["cpu"] == 2000


def test_sidecars_add_to_the_sum_and_to_later_init_containers() -> None:
    # sidecar 500m runs beside the app: 500m + 1 = 1.5 cpu; the init after it needs 2 + 0.5 = 2.5.
    spec = {
        "initContainers": [
            c("before", cpu="1"),
            c("sidecar", "Always", cpu="500m"),
            c("after", cpu="2"),
        ],
        "containers": [c(cpu="1")],
    }
    assert pod_requests(spec)["cpu"] == 2500


def test_an_init_container_before_a_sidecar_does_not_pay_for_it() -> None:
    spec = {
        "initContainers": [c("before", cpu="3"), c("sidecar", "Always", cpu="1")],
        "containers": [c(cpu="1")],
    }
    assert pod_requests(spec)["cpu"] == 3000


def test_overhead_is_added_after_everything() -> None:
    spec = {"containers": [c(cpu="1")], "initContainers": [c(cpu="2")], "overhead": {"cpu": "250m"}}
    assert pod_requests(spec)["cpu"] == 2250


def test_limits_stand_in_for_missing_requests() -> None:
    spec = {
        "containers": [
            {"name": "a", "resources": {"limits": {"cpu": "1", "ephemeral-storage": "30Gi"}}},
            {"name": "b", "resources": {"requests": {"cpu": "100m"}, "limits": {"cpu": "2"}}},
        ]
    }
    assert pod_requests(spec) == {"cpu": 1100, "ephemeral-storage": q("30Gi")}


def test_extended_resources_are_included() -> None:
    spec = {"containers": [c(**{"vpc.amazonaws.com/pod-eni": "1", "nvidia.com/gpu": "2"})]}
    assert pod_requests(spec) == {"vpc.amazonaws.com/pod-eni": 1000, "nvidia.com/gpu": 2000}


def test_pod_level_resources_replace_the_container_figure_for_cpu_and_memory() -> None:
    spec = {"resources": {"requests": {"cpu": "4"}}, "containers": [c(cpu="1", memory="1Gi")]}
    assert pod_requests(spec) == {"cpu": 4000, "memory": q("1Gi")}


def test_a_pod_with_no_containers_requests_nothing() -> None:
    assert pod_requests({}) == {}


def test_invalid_quantity_names_the_field_path() -> None:
    spec = {"containers": [c(cpu="1"), c(memory="lots")]}
    with pytest.raises(
        QuantityError, match=r"spec\.template\.spec\.containers\[1\]\.resources\.requests\.memory"
    ):
        pod_requests(spec, "spec.template.spec")


@pytest.mark.parametrize(
    "spec",
    [
        {"containers": "nope"},
        {"containers": [1]},
        {"containers": [{"resources": []}]},
        {"containers": [{"resources": {"requests": ["cpu"]}}]},
        {"containers": [c(cpu="-1")]},
    ],
)
def test_malformed_specs_raise_a_clear_error(spec: dict) -> None:
    with pytest.raises((TypeError, ValueError), match=r"spec\.containers"):
        pod_requests(spec)
