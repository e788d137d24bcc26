"""Pod effective requests follow the scheduler: containers, init and sidecar init containers,
pod-level resources and overhead."""

from collections.abc import Iterator

import pytest

from capacity.quantity import QuantityError, parse_quantity
from capacity.requests import pod_requests
from capacity.resources import add, parse_resources, take_max, to_quantities, total


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


# -- whole answers (the mutation run of capacity/requests.py and capacity/resources.py) --------


def test_every_resource_of_a_mixed_pod_is_computed_whole() -> None:
    """Each resource on its own: containers summed, sidecars added to the sum and to later init
    containers, the largest init figure per resource, pod-level cpu/memory, then overhead."""
    spec = {
        "initContainers": [
            c("first", memory="3Gi", cpu="100m"),
            c("side", "Always", cpu="200m", memory="100Mi", **{"nvidia.com/gpu": "1"}),
            c("late", cpu="1", **{"example.com/x": "5"}),
            c("side2", "Always", memory="50Mi"),
            c("last", memory="1Gi"),
        ],
        "containers": [c(cpu="300m", memory="1Gi"), c(cpu="100m", **{"example.com/x": "1"})],
        "resources": {"requests": {"memory": "8Gi", "ephemeral-storage": "1Gi"}},
        "overhead": {"cpu": "10m", "memory": "1Mi"},
    }
    assert pod_requests(spec) == {
        "cpu": 1210,  # max(300m + 100m + 200m sidecar, 1 + 200m) + 10m
        "memory": q("8Gi") + q("1Mi"),  # pod-level memory replaces the figure, overhead added
        "nvidia.com/gpu": 1000,
        "example.com/x": 5000,
    }


def test_an_ordinary_init_container_is_judged_by_its_figure_not_added() -> None:
    """Init containers run one at a time: a smaller one adds nothing, a larger one sets the figure."""
    small = {"containers": [c(cpu="1", memory="1Gi")], "initContainers": [c(cpu="500m"), c(memory="512Mi")]}
    assert pod_requests(small) == {"cpu": 1000, "memory": q("1Gi")}
    large = {"containers": [c(cpu="1")], "initContainers": [c(cpu="3"), c(cpu="2", memory="1Gi")]}
    assert pod_requests(large) == {"cpu": 3000, "memory": q("1Gi")}


def test_only_restart_policy_always_makes_a_sidecar() -> None:
    """`OnFailure` (or anything else) is an ordinary init container."""
    spec = {"containers": [c(cpu="1")], "initContainers": [c("x", "OnFailure", cpu="500m")]}
    assert pod_requests(spec) == {"cpu": 1000}


def test_pod_level_resources_without_requests_change_nothing() -> None:
    """Pod-level limits only, or an empty requests map, leave the container figures."""
    for level in ({"limits": {"cpu": "9"}}, {"requests": {}}, "x"):
        assert pod_requests({"resources": level, "containers": [c(cpu="1")]}) == {"cpu": 1000}
    spec = {"resources": {"requests": {"memory": "2Gi"}}, "containers": [c(cpu="1")]}
    assert pod_requests(spec) == {"cpu": 1000, "memory": q("2Gi")}


def test_a_container_without_resources_requests_nothing() -> None:
    """No `resources` (or null) is an empty request."""
    assert pod_requests({"containers": [{"name": "a"}, {"name": "b", "resources": None}]}) == {}


@pytest.mark.parametrize(
    ("spec", "error", "message"),
    [
        ({"containers": "nope"}, TypeError, "s.containers: expected a list of containers"),
        ({"containers": [1]}, TypeError, "s.containers: expected a list of containers"),
        ({"initContainers": "x"}, TypeError, "s.initContainers: expected a list of containers"),
        ({"containers": [{"resources": []}]}, TypeError, "s.containers[0].resources: expected a map"),
        ({"initContainers": [{"resources": 1}]}, TypeError, "s.initContainers[0].resources: expected a map"),
        (
            {"containers": [{"resources": {"requests": ["cpu"]}}]},
            TypeError,
            "s.containers[0].resources.requests: expected a map of resource quantities, got list",
        ),
        (
            {"containers": [{}, {"resources": {"limits": "1"}}]},
            TypeError,
            "s.containers[1].resources.limits: expected a map of resource quantities, got str",
        ),
        (
            {"containers": [c(cpu="-1")]},
            ValueError,
            "s.containers[0].resources.requests.cpu: must not be negative",
        ),
        (
            {"containers": [{"resources": {"limits": {"memory": "-1"}}}]},
            ValueError,
            "s.containers[0].resources.requests.memory: must not be negative",
        ),
        (
            {"containers": [], "overhead": []},
            TypeError,
            "s.overhead: expected a map of resource quantities, got list",
        ),
        (
            {"containers": [], "resources": {"requests": ["cpu"]}},
            TypeError,
            "s.resources.requests: expected a map of resource quantities, got list",
        ),
    ],
)
def test_a_malformed_spec_raises_naming_the_field_whole(
    spec: dict, error: type[Exception], message: str
) -> None:
    """Every malformed part raises with the whole message naming the field path."""
    with pytest.raises(error) as raised:
        pod_requests(spec, "s")
    assert str(raised.value) == message


def test_the_field_prefix_defaults_to_spec() -> None:
    """Without a field the path starts at `spec`."""
    with pytest.raises(TypeError) as raised:
        pod_requests({"containers": [{"resources": 1}]})
    assert str(raised.value) == "spec.containers[0].resources: expected a map"


def test_resource_list_operations() -> None:
    """parse_resources, add, take_max, total and to_quantities on whole maps."""
    assert parse_resources(None, "f") == {}
    assert parse_resources({"cpu": "1", "memory": "1Ki"}, "f") == {"cpu": 1000, "memory": 1024000}
    target = {"cpu": 1000, "memory": 5}
    assert add(target, {"cpu": 500, "pods": 1000}) is target
    assert target == {"cpu": 1500, "memory": 5, "pods": 1000}
    floor = {"cpu": 1000, "memory": 9}
    assert take_max(floor, {"cpu": 2000, "memory": 3, "pods": 4}) is floor
    assert floor == {"cpu": 2000, "memory": 9, "pods": 4}
    assert total([{"cpu": 1}, {"cpu": 2, "memory": 3}, {}]) == {"cpu": 3, "memory": 3}
    assert total([]) == {}
    assert list(to_quantities({"memory": 2**30 * 1000, "cpu": 1500, "pods": 29000}).items()) == [
        ("cpu", "1500m"),
        ("memory", "1Gi"),
        ("pods", "29"),
    ]
    with pytest.raises(QuantityError) as raised:
        parse_resources({"cpu": "x"}, "f")
    assert raised.value.field == "f.cpu"


@pytest.fixture
def empty_quantity_memo() -> Iterator[None]:
    """capacity.resources' memo of quantity strings starts empty and is emptied again, pass or fail."""
    from capacity import resources

    resources._SEEN.clear()
    yield
    resources._SEEN.clear()


def test_a_quantity_string_is_remembered_with_its_value_and_the_memo_stays_bounded(
    empty_quantity_memo: None,
) -> None:
    """parse_resources remembers each quantity string it accepted with its milli-units (a string
    met again gives the same value, under any resource and field), never a refused one, never a
    value that is not a string, and holds at most `_SEEN_MAX` strings however many it meets."""
    from capacity import resources

    assert parse_resources({"cpu": "250m", "memory": "1Gi", "pods": 3}, "r") == {
        "cpu": 250,
        "memory": 1024**3 * 1000,
        "pods": 3000,
    }
    assert resources._SEEN == {"250m": 250, "1Gi": 1024**3 * 1000}
    assert parse_resources({"example.com/x": "250m", "cpu": "1Gi"}, "other") == {
        "example.com/x": 250,
        "cpu": 1024**3 * 1000,
    }
    with pytest.raises(QuantityError, match=r"^r\.cpu: "):
        parse_resources({"cpu": "lots"}, "r")
    assert resources._SEEN == {"250m": 250, "1Gi": 1024**3 * 1000}
    parse_resources({f"r{i}": f"{i}Ki" for i in range(resources._SEEN_MAX + 10)}, "many")
    assert len(resources._SEEN) == resources._SEEN_MAX
    assert resources._SEEN["4093Ki"] == 4093 * 1024 * 1000  # the two above and 4,094 of these
    assert "4094Ki" not in resources._SEEN
    assert parse_resources({"memory": "4094Ki"}, "r") == {"memory": 4094 * 1024 * 1000}


def test_a_remembered_quantity_is_not_parsed_again_and_a_value_of_another_type_is_judged_alone(
    empty_quantity_memo: None,
) -> None:
    """A string the memo holds is answered from it (a made-up entry shows the parse was skipped);
    a value that is not a string never consults the memo: a list or a map is refused naming its
    field, a number is read as itself, and neither is remembered."""
    from capacity import resources

    resources._SEEN["made-up"] = 7
    assert parse_resources({"cpu": "made-up"}, "r") == {"cpu": 7}
    for value, shown in ((["1"], "['1']"), ({"a": 1}, "{'a': 1}")):
        with pytest.raises(QuantityError) as refused:
            parse_resources({"cpu": value}, "r")
        assert str(refused.value) == f"r.cpu: invalid quantity {shown} (not a number or string)"
    assert parse_resources({"cpu": 1.5, "pods": 2}, "r") == {"cpu": 1500, "pods": 2000}
    assert resources._SEEN == {"made-up": 7}
