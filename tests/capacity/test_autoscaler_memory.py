"""cluster-autoscaler's memory of a group's last live node, as pure rules: its flags read as pflag
reads them, its process found in its pods, the good-template-candidate rule, when it remembers a
group (started before the last sighting, not expired), the remembered template with the tag
resources it lacks, and what the webhook and the demand make of it."""

from __future__ import annotations

import copy
import math
import time
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from capacity.autoscaler_flags import flag_value, parse_go_duration, pod_selector
from capacity.autoscaler_memory import (
    AutoscalerProcess,
    format_time,
    next_memory,
    parse_time,
    process_of,
    refresh_period,
    running_autoscaler,
)
from capacity.autoscaler_readiness import is_template_candidate
from capacity.demand import Skipped, classify, pending_shapes
from capacity.fit import PodNeeds
from capacity.serve import denial_message, memory_reliance, memory_warnings, refusals
from capacity.template import AutoscalerMemory, NodeGroupTemplate, View
from controller.cycle_table import cycle_table

GIB = 2**30 * 1000  # milli-units
T0 = parse_time("2026-11-30T12:00:00Z")
HOUR = 3600.0
EPH_TAG = "k8s.io/cluster-autoscaler/node-template/resources/ephemeral-storage"
LOOKED_FOR = "pods app.kubernetes.io/name=aws-cluster-autoscaler in all namespaces"
LIVE = View(
    {"cpu": 1930, "memory": 7220 * 2**20 * 1000, "ephemeral-storage": 44 * GIB, "pods": 29000},
    {"node.kubernetes.io/instance-type": "m5.large", "team": "ml"},
    (),
    "live-node",
)
TAGS = View(
    {"cpu": 2000, "memory": 8 * GIB, "pods": 110000, "vpc.amazonaws.com/pod-eni": 9000},
    {"node.kubernetes.io/instance-type": "m5.large"},
    (),
    "tags",
)


def process(started: float = T0, expire: str = "87600h", scan: float = 10.0) -> AutoscalerProcess:
    return AutoscalerProcess("kube-system/ca-1", started, expire, parse_go_duration(expire), "", scan)


def ca_pod(
    name: str = "ca-1",
    started: str | None = "2026-11-30T12:00:00Z",
    command: list[str] | None = None,
    args: list[str] | None = None,
    state: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """A cluster-autoscaler pod as the Helm chart makes it (flags in `command`)."""
    container: dict[str, Any] = {"name": "aws-cluster-autoscaler", "image": "registry.k8s.io/autoscaling/ca"}
    container["command"] = (
        command if command is not None else ["./cluster-autoscaler", "--cloud-provider=aws"]
    )
    if args is not None:
        container["args"] = args
    running = {"running": {"startedAt": started}} if started else {"waiting": {"reason": "CrashLoopBackOff"}}
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"namespace": "kube-system", "name": name, "labels": {"app.kubernetes.io/name": "x"}},
        "spec": {"containers": [{"name": "sidecar", "command": ["/pause"]}, container]},
        "status": {
            "phase": "Running",
            "startTime": "2026-11-01T00:00:00Z",
            "containerStatuses": [{"name": "aws-cluster-autoscaler", "state": state or running}],
        },
    }


def group(memory: AutoscalerMemory | None = None, **changes: Any) -> NodeGroupTemplate:
    fields: dict[str, Any] = {
        "name": "ng-batch",
        "provider": "aws-asg",
        "instance_types": ("m5.large",),
        "max_size": 10,
        "actual": View(LIVE.allocatable, LIVE.labels, (), "launch-template"),
        "autoscaler": TAGS,
        "memory": memory,
    }
    fields.update(changes)
    return NodeGroupTemplate(**fields)


def remembering(view: View = LIVE) -> AutoscalerMemory:
    return AutoscalerMemory(True, "remembers", view, "2026-11-30T13:00:00Z", "kube-system/ca-1")


def needs(**requests: str) -> PodNeeds:
    return PodNeeds.from_spec({"containers": [{"name": "c", "resources": {"requests": requests}}]})


# --- flags and durations, as cluster-autoscaler reads them ----------------------------------------


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("87600h", 315_360_000.0),
        ("1h30m", 5400.0),
        ("1.5s", 1.5),
        ("300ms", 0.3),
        ("2µs", 2e-6),
        (".5m", 30.0),
        ("0", 0.0),
        ("-1m", -60.0),
        ("+2h", 7200.0),
    ],
)
def test_go_durations_are_read_as_time_parse_duration_reads_them(text: str, seconds: float) -> None:
    """Go's duration syntax: signed, several unit parts, fractions, bare 0."""
    assert parse_go_duration(text) == pytest.approx(seconds, rel=1e-12)


@pytest.mark.parametrize("text", ["", "1", "1d", "h", ".", "1h 2m", "3000000h", "10x"])
def test_durations_go_refuses_are_refused(text: str) -> None:
    """No unit, unknown unit, no digits, a space, beyond int64 nanoseconds: errors, as in Go."""
    with pytest.raises(ValueError, match="duration"):
        parse_go_duration(text)


def test_flags_are_read_as_pflag_reads_them() -> None:
    """`--f=v` and `--f v`, underscores as dashes (WordSepNormalizeFunc), the last one wins,
    nothing after `--`, absent is None."""
    flag = "node-info-cache-expire-time"
    assert flag_value(["ca", "--node-info-cache-expire-time=1h"], flag) == "1h"
    assert flag_value(["ca", "--node_info_cache_expire_time", "2h"], flag) == "2h"
    assert flag_value(["ca", f"--{flag}=1h", "--v=4", f"--{flag}=3h"], flag) == "3h"
    assert flag_value(["ca", "--", f"--{flag}=1h"], flag) is None
    assert flag_value(["ca", "--scan-interval=5s", "-node-info-cache-expire-time=1h"], flag) is None


def test_a_fraction_beyond_nanoseconds_is_cut_as_go_cuts_it() -> None:
    """time.ParseDuration keeps whole nanoseconds of a fraction (it truncates, never rounds):
    `1.0000000019s` is 1,000,000,001 ns, not 1,000,000,001.9 (golang/go `src/time/format.go`,
    `ParseDuration`: the fraction's nanoseconds converted to an unsigned integer)."""
    assert parse_go_duration("1.0000000019s") == 1_000_000_001 / 1e9
    assert parse_go_duration("0.9999999999s") == 999_999_999 / 1e9


def test_the_longest_go_duration_is_accepted_and_one_nanosecond_more_is_not() -> None:
    """int64 nanoseconds: 9223372036854775807ns is the last positive duration Go reads; the next is
    refused with the whole message, naming the text (golang/go `src/time/format.go`,
    `ParseDuration`: more than 1<<63 - 1 without a minus sign is refused)."""
    assert parse_go_duration("9223372036854775807ns") == (2**63 - 1) / 1e9
    with pytest.raises(ValueError) as refused:
        parse_go_duration("9223372036854775808ns")
    assert str(refused.value) == "invalid duration '9223372036854775808ns': out of range"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("", "invalid duration ''"),
        ("-", "invalid duration '-'"),
        ("1h.m", "invalid duration '1h.m'"),
        ("10x", "unknown unit 'x' in duration '10x'"),
    ],
)
def test_a_refused_duration_says_why_in_whole(text: str, message: str) -> None:
    """The whole message of each refusal: no digits, nothing after the sign, an unknown unit."""
    with pytest.raises(ValueError) as refused:
        parse_go_duration(text)
    assert str(refused.value) == message


def test_flag_values_keep_their_own_equals_signs_and_a_last_flag_without_value_is_not_given() -> None:
    """`--f=a=b` is `a=b` (pflag splits at the first `=`); a bare `--f` as the last word has no
    value to take, so the earlier value stands, or None when there is none; a single-dash word
    or another flag's value is never read as the flag."""
    flag = "expander"
    assert flag_value(["ca", "--expander=priority=x"], flag) == "priority=x"
    assert flag_value(["ca", "--expander=least-waste", "--expander"], flag) == "least-waste"
    assert flag_value(["ca", "--expander"], flag) is None
    assert flag_value(["ca", "--v", "--expander", "random"], flag) == "random"
    assert flag_value(["--expander", "random", "--", "--expander=priority"], flag) == "random"


def test_an_empty_selector_selects_every_pod() -> None:
    """The API's empty selector (or only blanks) matches everything, labels or none."""
    for text in ("", "  "):
        assert pod_selector(text)({}) is True
        assert pod_selector(text)({"app": "x"}) is True


def test_each_selector_term_alone_on_present_and_absent_labels() -> None:
    """Every operator answers both ways, on a pod that has the key and one that does not."""
    with_tier = {"tier": "system"}
    cases = [
        ("tier=system", True, False),
        ("tier==system", True, False),
        ("tier!=system", False, True),
        ("tier", True, False),
        ("!tier", False, True),
        ("tier in (system)", True, False),
        ("tier in ( infra , system )", True, False),
        ("tier notin (system)", False, True),
        ("tier notin (infra)", True, True),
        ("tier=", False, False),
    ]
    answers = [(text, pod_selector(text)(with_tier), pod_selector(text)({})) for text, _, _ in cases]
    assert answers == cases


def test_an_unreadable_selector_is_refused_with_the_whole_message() -> None:
    """The message names the whole selector and the term that could not be read; past an unbalanced
    `)` commas no longer split terms, so the rest is one unreadable term."""
    with pytest.raises(ValueError) as refused:
        pod_selector("app=x, a=b=c")
    assert str(refused.value) == "label selector 'app=x, a=b=c': cannot read 'a=b=c'"
    with pytest.raises(ValueError) as refused:
        pod_selector("app in (a,b)),c")
    assert str(refused.value) == "label selector 'app in (a,b)),c': cannot read 'app in (a,b)),c'"


# --- the running cluster-autoscaler -------------------------------------------------------------


def test_the_chart_pod_gives_its_process_start_and_expiry() -> None:
    """The container running ./cluster-autoscaler (not the first one): its own start, and its
    flags from command and args together."""
    pod = ca_pod(args=["--node-info-cache-expire-time=2h", "--scan-interval=30s"])
    assert process_of(pod) == AutoscalerProcess("kube-system/ca-1", T0, "2h", 7200.0, "", 30.0)


def test_defaults_when_the_flags_are_not_given() -> None:
    """Ten years and a 10 s loop, as flags.go has them."""
    assert process_of(ca_pod()) == AutoscalerProcess(
        "kube-system/ca-1", T0, "87600h", 315_360_000.0, "", 10.0
    )


def test_a_container_restart_is_a_new_process() -> None:
    """The container's startedAt, not the pod's startTime: a restarted container forgot everything."""
    later = ca_pod(started="2026-11-30T15:00:00Z")
    assert process_of(later) == AutoscalerProcess(
        "kube-system/ca-1", T0 + 3 * HOUR, "87600h", 315_360_000.0, "", 10.0
    )


def test_a_pod_that_runs_no_autoscaler_process_counts_for_none() -> None:
    """Waiting in a crash loop, or terminated: no process, no memory."""
    assert process_of(ca_pod(started=None)) is None
    terminated = ca_pod(state={"terminated": {"startedAt": "2026-11-30T12:00:00Z", "exitCode": 1}})
    assert process_of(terminated) is None


def test_no_container_status_yet_falls_back_to_the_running_pods_start() -> None:
    """status.startTime stands in when the container has no status but the pod runs."""
    pod = ca_pod()
    pod["status"]["containerStatuses"] = []
    assert process_of(pod) == AutoscalerProcess(
        "kube-system/ca-1", parse_time("2026-11-01T00:00:00Z"), "87600h", 315_360_000.0, "", 10.0
    )
    pod["status"]["phase"] = "Pending"
    assert process_of(pod) is None


def test_an_unreadable_expiry_is_reported_not_guessed() -> None:
    """A value Go would refuse: no expiry, and the error kept for the reason."""
    found = process_of(ca_pod(args=["--node-info-cache-expire-time=ten-years"]))
    assert found is not None and found.expire_after is None
    assert found.expire_error == "invalid duration 'ten-years'"


def test_of_several_pods_the_newest_process_counts() -> None:
    """The replica that started last (a standby restarting would be too; that errs towards tags)."""
    old, new = ca_pod("ca-old"), ca_pod("ca-new", started="2026-11-30T14:00:00Z")
    found = running_autoscaler([old, new, ca_pod("ca-down", started=None)])
    assert found is not None and (found.pod, found.started) == ("kube-system/ca-new", T0 + 2 * HOUR)
    assert running_autoscaler([ca_pod("ca-down", started=None)]) is None


def test_pod_selector_strings() -> None:
    """The API's selector grammar for a state file's pods: equality, inequality, existence, sets."""
    labels = {"app.kubernetes.io/name": "aws-cluster-autoscaler", "tier": "system"}
    assert pod_selector("app.kubernetes.io/name=aws-cluster-autoscaler")(labels)
    assert pod_selector("app.kubernetes.io/name==aws-cluster-autoscaler,tier")(labels)
    assert not pod_selector("app.kubernetes.io/name!=aws-cluster-autoscaler")(labels)
    assert not pod_selector("!tier")(labels)
    assert pod_selector("tier in (system, infra),zone notin (a)")(labels)
    assert not pod_selector("tier notin (system)")(labels)
    with pytest.raises(ValueError, match="cannot read"):
        pod_selector("a=b=c")
    with pytest.raises(ValueError, match="cannot read"):
        pod_selector("a=b,,c")


# --- which live node cluster-autoscaler keeps ----------------------------------------------------


# Not tests.objects.node: when the node became Ready is what cluster-autoscaler's memory reads.
def node(ready_since: str | None = "2026-11-30T11:00:00Z", **spec: Any) -> dict[str, Any]:
    condition: dict[str, Any] = {"type": "Ready", "status": "True"}
    if ready_since:
        condition["lastTransitionTime"] = ready_since
    return {"metadata": {"name": "n"}, "spec": spec, "status": {"conditions": [condition]}}


def test_good_template_candidates_are_ready_for_over_a_minute_schedulable_and_not_being_deleted() -> None:
    """isNodeGoodTemplateCandidate: a node Ready for exactly a minute is not yet stable."""
    now = T0
    assert is_template_candidate(node(), now)
    assert is_template_candidate(node(ready_since=None), now)
    assert is_template_candidate(node(ready_since=format_time(now - 61)), now)
    assert not is_template_candidate(node(ready_since=format_time(now - 60)), now)
    assert not is_template_candidate(node(unschedulable=True), now)
    deleting = node(taints=[{"key": "ToBeDeletedByClusterAutoscaler", "effect": "NoSchedule"}])
    assert not is_template_candidate(deleting, now)
    not_ready = node()
    not_ready["status"]["conditions"][0]["status"] = "False"
    assert not is_template_candidate(not_ready, now)
    assert not is_template_candidate({"status": {}}, now)


# --- when cluster-autoscaler remembers ----------------------------------------------------------


def seen_at(at: float, view: View = LIVE, started: float = T0) -> AutoscalerMemory:
    """The memory recorded at a cycle that saw a live node at `at`."""
    return next_memory(None, view, process(started), at, LOOKED_FOR)


def test_a_group_whose_last_node_went_away_after_the_autoscaler_started_is_remembered() -> None:
    """Started at T0, node last seen at T0+1h, now T0+2h, ten-year expiry: remembered, whole record."""
    memory = next_memory(seen_at(T0 + HOUR), None, process(), T0 + 2 * HOUR, LOOKED_FOR)
    assert memory == AutoscalerMemory(
        remembers=True,
        reason=(
            "cluster-autoscaler kube-system/ca-1 (started 2026-11-30T12:00:00Z) saw a live node of the "
            "group at 2026-11-30T13:00:00Z and builds the group's next node from it until it restarts "
            "or until 2036-11-27T13:00:00Z"
        ),
        view=LIVE,
        last_seen="2026-11-30T13:00:00Z",
        autoscaler="kube-system/ca-1",
        started="2026-11-30T12:00:00Z",
        expires="2036-11-27T13:00:00Z",
    )


def test_an_autoscaler_started_after_the_last_sighting_builds_from_tags() -> None:
    """Restarted at T0+90m, after the node was last seen at T0+1h: forgotten."""
    before = seen_at(T0 + HOUR)
    memory = next_memory(before, None, process(started=T0 + 1.5 * HOUR), T0 + 2 * HOUR, LOOKED_FOR)
    assert memory == AutoscalerMemory(
        remembers=False,
        reason=(
            "cluster-autoscaler kube-system/ca-1 started at 2026-11-30T13:30:00Z; its first loop may not "
            "have run before 2026-11-30T13:31:29Z, too late to be sure it saw the group's last live node "
            "(seen 2026-11-30T13:00:00Z): it builds the group's node from its tags"
        ),
        view=LIVE,
        last_seen="2026-11-30T13:00:00Z",
        autoscaler="kube-system/ca-1",
        started="2026-11-30T13:30:00Z",
        expires="",
    )


@pytest.mark.parametrize(
    ("flags", "first_loop"),
    [
        ([], 89.4),  # 15 s lease + 2 s retry x 2.2 jitter + 60 s build + 10 s scan interval
        (["--leader-elect=false"], 70.0),  # no lease to wait for
        (["--leader-elect"], 89.4),
        (["--leader_elect=f"], 70.0),  # `_` read as `-`, strconv.ParseBool's "f"
        (["--leader-elect=maybe"], 89.4),  # unreadable: taken as on (the later bound)
        (["--leader-elect-lease-duration=60s", "--leader-elect-retry-period", "5s"], 141.0),
        (["--leader-elect=false", "--", "--leader-elect=true"], 70.0),  # after `--`: no flag
        (["--scan-interval=1m", "--leader-elect-lease-duration=bad"], 139.4),
    ],
    ids=[
        "defaults",
        "no-election",
        "bare-bool",
        "underscore-f",
        "unreadable-bool",
        "lease-flags",
        "dashdash",
        "scan",
    ],
)
def test_the_autoscaler_must_have_run_its_first_loop_while_the_node_was_seen(
    flags: list[str], first_loop: float
) -> None:
    """main.go: with leader election it waits for the Lease (a predecessor stopped by a signal does
    not release it: a lease duration, plus client-go's jittered retry), builds the cloud provider
    (fitguard allows 60 s) and then waits a scan interval before its first loop. A node last seen
    before that bound may have gone before cluster-autoscaler cached it: not remembered; seen at
    the bound: remembered."""
    started = process_of(ca_pod(command=["./cluster-autoscaler", "--cloud-provider=aws", *flags]))
    assert started is not None
    assert started.first_loop - started.started == pytest.approx(first_loop)
    now = T0 + HOUR
    bound = math.ceil(first_loop)
    before = AutoscalerMemory(True, "", LIVE, format_time(T0 + bound - 1), "kube-system/ca-1")
    assert not next_memory(before, None, started, now, LOOKED_FOR).remembers
    after = AutoscalerMemory(True, "", LIVE, format_time(T0 + bound), "kube-system/ca-1")
    assert next_memory(after, None, started, now, LOOKED_FOR).remembers


def test_the_memory_expires_after_the_flag_and_not_a_second_before() -> None:
    """--node-info-cache-expire-time=1h, seen at T0+1h: remembered at T0+2h exactly (upstream
    expires only past the TTL), forgotten a second later, with when and why."""
    before = seen_at(T0 + HOUR)
    at_limit = next_memory(before, None, process(expire="1h"), T0 + 2 * HOUR, LOOKED_FOR)
    assert at_limit.remembers and at_limit.expires == "2026-11-30T14:00:00Z"
    past = next_memory(before, None, process(expire="1h"), T0 + 2 * HOUR + 1, LOOKED_FOR)
    assert (past.remembers, past.reason, past.expires) == (
        False,
        "cluster-autoscaler forgot the group's last live node (seen 2026-11-30T13:00:00Z) at "
        "2026-11-30T14:00:00Z (--node-info-cache-expire-time=1h): it builds the group's node from its tags",
        "2026-11-30T14:00:00Z",
    )


def test_without_an_autoscaler_or_a_sighting_nothing_is_remembered() -> None:
    """No cluster-autoscaler pod: the sighting is kept, but judged by tags; never seen: no view."""
    no_ca = next_memory(seen_at(T0 + HOUR), None, None, T0 + 2 * HOUR, LOOKED_FOR)
    assert no_ca == AutoscalerMemory(
        False,
        f"no running cluster-autoscaler found ({LOOKED_FOR}): judged by its tags",
        LIVE,
        "2026-11-30T13:00:00Z",
    )
    never = next_memory(None, None, process(), T0 + HOUR, LOOKED_FOR)
    assert never == AutoscalerMemory(
        False,
        "fitguard has not seen a live node of the group that cluster-autoscaler keeps",
        None,
        "",
        "kube-system/ca-1",
        "2026-11-30T12:00:00Z",
    )
    broken = AutoscalerProcess("kube-system/ca-1", T0, "x", None, "invalid duration 'x'")
    unreadable = next_memory(seen_at(T0 + HOUR), None, broken, T0 + 2 * HOUR, LOOKED_FOR)
    assert not unreadable.remembers
    assert (
        unreadable.reason
        == "--node-info-cache-expire-time unreadable (invalid duration 'x'): judged by its tags"
    )


def test_the_sighting_is_written_again_only_when_it_matters() -> None:
    """With the node still live: kept while fresh and unchanged (no write per cycle), renewed when
    the node's shape changed, when it predates the autoscaler's first loop, or after an hour."""
    first = seen_at(T0 + HOUR)
    same = next_memory(first, LIVE, process(), T0 + HOUR + 600, LOOKED_FOR)
    assert same == first
    bigger = View({**LIVE.allocatable, "cpu": 3920}, LIVE.labels, (), "live-node")
    changed = next_memory(first, bigger, process(), T0 + HOUR + 600, LOOKED_FOR)
    assert (changed.view, changed.last_seen) == (bigger, "2026-11-30T13:10:00Z")
    restarted = next_memory(first, LIVE, process(started=T0 + HOUR + 300), T0 + HOUR + 600, LOOKED_FOR)
    assert (restarted.last_seen, restarted.remembers) == ("2026-11-30T13:10:00Z", True)
    hour_later = next_memory(first, LIVE, process(), T0 + 2 * HOUR, LOOKED_FOR)
    assert hour_later.last_seen == "2026-11-30T14:00:00Z"


# --- the template, the webhook, the demand -------------------------------------------------------


def test_the_remembered_view_gains_the_tag_resources_the_node_lacks() -> None:
    """AsgTagResourceNodeInfoProvider: each allocatable resource of the tag-built template missing on
    the remembered node is added; the node's own values win. Whole map."""
    template = group(remembering())
    assert template.remembered == View(
        {**LIVE.allocatable, "vpc.amazonaws.com/pod-eni": 9000}, LIVE.labels, (), "autoscaler-memory"
    )
    assert template.judged_view() == (
        template.remembered,
        "no nodes: cluster-autoscaler remembers a live node of the group",
    )
    assert template.judged_view(with_memory=False) == (
        TAGS,
        "no nodes: cluster-autoscaler builds the node from tags",
    )


def test_only_a_remembering_memory_of_an_autoscaled_group_at_zero_changes_the_judgement() -> None:
    """Not remembered, manual capacity, live nodes or fitguard's own scaling: as before."""
    forgotten = AutoscalerMemory(False, "restarted", LIVE, "2026-11-30T13:00:00Z")
    assert group(forgotten).remembered is None
    assert group(remembering(), provider="manual").remembered is None
    live = group(remembering(), nodes=1)
    assert live.judged_view()[0] is live.actual
    ours = group(remembering(), scale_from_zero="fitguard")
    assert ours.judged_view()[0] is ours.actual


def test_the_memory_survives_the_object_round_trip() -> None:
    """spec.autoscalerMemory as written, whole, and read back equal (a new leader reads this)."""
    memory = AutoscalerMemory(
        True,
        "why",
        LIVE,
        "2026-11-30T13:00:00Z",
        "kube-system/ca-1",
        "2026-11-30T12:00:00Z",
        "2036-11-27T13:00:00Z",
    )
    obj = group(memory).to_object()
    assert obj["spec"]["autoscalerMemory"] == {
        "remembers": True,
        "reason": "why",
        "allocatable": {
            "cpu": "1930m",
            "memory": "7220Mi",
            "ephemeral-storage": "44Gi",
            "pods": "29",
        },
        "labels": {"node.kubernetes.io/instance-type": "m5.large", "team": "ml"},
        "taints": [],
        "lastSeen": "2026-11-30T13:00:00Z",
        "autoscaler": "kube-system/ca-1",
        "started": "2026-11-30T12:00:00Z",
        "expires": "2036-11-27T13:00:00Z",
    }
    assert NodeGroupTemplate.from_object(obj) == group(memory)


def test_a_memory_that_claims_to_remember_nothing_is_refused() -> None:
    """remembers: true without the template it remembers is an error naming the field."""
    obj = group().to_object()
    obj["spec"]["autoscalerMemory"] = {"remembers": True, "reason": "x"}
    with pytest.raises(ValueError, match=r"spec.autoscalerMemory: remembers a template"):
        NodeGroupTemplate.from_object(obj)
    obj["spec"]["autoscalerMemory"] = {"remembers": "yes"}
    with pytest.raises(TypeError, match=r"spec.autoscalerMemory.remembers: expected a boolean"):
        NodeGroupTemplate.from_object(obj)


def test_a_pod_only_the_remembered_node_serves_is_let_through_with_the_groups_it_rests_on() -> None:
    """30Gi of scratch: the tags offer no ephemeral-storage, the remembered node 44Gi. refusals
    lets it through; memory_reliance names ng-batch with the tag reason; the warning says until
    when and which tag makes it permanent. Whole lines."""
    template = group(remembering())
    small = group(None, name="ng-small")  # remembers nothing, and its tags have no scratch space
    pod = needs(**{"ephemeral-storage": "30Gi"})
    assert refusals(pod, [small, template]) is None
    relied = memory_reliance(pod, [small, template])
    assert relied is not None and [(v.group, v.remembered) for v in relied] == [("ng-batch", True)]
    assert [(r.message, r.resource) for r in relied[0].reasons] == [
        ("Insufficient ephemeral-storage", "ephemeral-storage")
    ]
    assert memory_warnings(relied, pod) == [
        "pod fits only the node cluster-autoscaler remembers of ng-batch: "
        "it scales up for it only until it restarts",
        f"to make it permanent, tag the ASG of ng-batch {EPH_TAG}",
        "or let fitguard sync the tags: fitguard controller --sync-autoscaler-tags=apply",
    ]


def test_a_pod_served_for_good_somewhere_rests_on_no_memory() -> None:
    """The tags serve it, or another group's tags do: no warning. Without memory: no warning."""
    remembered = group(remembering())
    assert memory_reliance(needs(cpu="1"), [remembered]) is None
    other = group(None, name="ng-big", autoscaler=View({**TAGS.allocatable, "ephemeral-storage": 100 * GIB}))
    assert memory_reliance(needs(**{"ephemeral-storage": "30Gi"}), [remembered, other]) is None
    assert memory_reliance(needs(**{"ephemeral-storage": "30Gi"}), [other]) is None


def test_a_pod_the_remembered_node_cannot_hold_is_refused_with_its_figures() -> None:
    """While remembered, the group is judged by the remembered node: 50Gi does not fit 44Gi."""
    verdicts = refusals(needs(**{"ephemeral-storage": "50Gi"}), [group(remembering())])
    assert verdicts is not None and [v.view for v in verdicts] == [group(remembering()).remembered]
    assert not [v for v in verdicts if v.trap]


def test_the_cache_note_is_kept_only_where_the_memory_is_unknown() -> None:
    """A tag trap with a cluster-autoscaler observed and not remembering: no 'may still scale it'
    note; with no record of the memory the note stays."""
    pod = needs(**{"ephemeral-storage": "30Gi"})
    forgotten = AutoscalerMemory(False, "restarted", LIVE, "2026-11-30T13:00:00Z", "kube-system/ca-1")
    known = refusals(pod, [group(forgotten)])
    unknown = refusals(pod, [group(None)])
    assert known is not None and unknown is not None
    assert "note:" not in denial_message(known, pod)
    assert denial_message(unknown, pod).splitlines()[-1].startswith("note: cluster-autoscaler may still")


def pending(name: str, **requests: str) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "default", "name": name},
        "spec": {"containers": [{"name": "c", "resources": {"requests": requests}}]},
        "status": {
            "phase": "Pending",
            "conditions": [{"type": "PodScheduled", "status": "False", "reason": "Unschedulable"}],
        },
    }


def test_demand_counts_the_remembered_node_as_what_cluster_autoscaler_adds() -> None:
    """A pending pod the remembered node serves is cluster-autoscaler's to scale for, not fitguard's
    blind demand; once forgotten, the same pod is blind demand."""
    shapes, _ = pending_shapes([pending("scratch", **{"ephemeral-storage": "30Gi"})])
    served = classify(shapes, [group(remembering())])
    assert served.shapes == [] and served.skipped == [
        Skipped(shapes[0], "cluster-autoscaler can serve it with a node of ng-batch")
    ]
    forgotten = AutoscalerMemory(False, "restarted", LIVE, "2026-11-30T13:00:00Z", "kube-system/ca-1")
    assert classify(shapes, [group(forgotten)]).shapes == shapes


def test_the_crd_schema_accepts_the_memory_record_and_refuses_a_malformed_one() -> None:
    """The object the controller writes passes the CRD's schema; `remembers: "yes"` does not."""
    crd = yaml.safe_load((Path(__file__).parents[2] / "manifests/crds/nodegrouptemplates.yaml").read_text())
    schema = crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]
    memory = AutoscalerMemory(True, "why", LIVE, "2026-11-30T13:00:00Z", "kube-system/ca-1", "", "")
    obj = group(memory).to_object()
    jsonschema.validate(obj, schema)
    bad = copy.deepcopy(obj)
    bad["spec"]["autoscalerMemory"]["remembers"] = "yes"
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(bad, schema)


def test_unreadable_times_prove_nothing() -> None:
    """A pod start nobody can read: no process; a Ready transition nobody can read: not a stable
    candidate; a recorded sighting that is not a time: the object is refused, naming the field."""
    assert process_of(ca_pod(started="yesterday")) is None
    assert process_of(ca_pod(started="2026-11-30T12:00:00")) is None  # no offset
    assert not is_template_candidate(node(ready_since="an hour ago"), T0)
    obj = group(remembering()).to_object()
    obj["spec"]["autoscalerMemory"]["lastSeen"] = "an hour ago"
    with pytest.raises(ValueError, match=r"spec.autoscalerMemory.lastSeen: expected an RFC 3339 time"):
        NodeGroupTemplate.from_object(obj)


def test_the_controller_table_says_per_group_whether_cluster_autoscaler_remembers_it() -> None:
    """`fitguard controller --once` (table): yes with until when, no (a cluster-autoscaler seen that
    does not remember), no CA seen, - (no record at all)."""
    remembers = AutoscalerMemory(
        True, "r", LIVE, "2026-11-30T13:00:00Z", "kube-system/ca-1", "", "2036-11-27T13:00:00Z"
    )
    forgot = AutoscalerMemory(False, "restarted", None, "", "kube-system/ca-1")
    objects = [
        group(remembers).to_object(),
        group(forgot, name="ng-b").to_object(),
        group(None, name="ng-c").to_object(),
        group(AutoscalerMemory(False, "no running cluster-autoscaler found"), name="ng-d").to_object(),
    ]
    lines = cycle_table({"nodeGroups": objects, "tagSync": [], "errors": {}}).splitlines()
    column = lines[0].index("CA MEMORY")
    cells = [(line.split()[0], line[column:].split("  ")[0].strip()) for line in lines[1:]]
    assert cells == [
        ("ng-batch", "yes, until restart or 2036-11-27T13:00:00Z"),
        ("ng-b", "no"),
        ("ng-c", "-"),
        ("ng-d", "no CA seen"),
    ]


# --- the edges of the rules above, one value each ---------------------------------------------------


def _containers_pod(
    *containers: dict[str, Any], statuses: list[dict[str, Any]] | None = None
) -> dict[str, Any]:
    return {
        "metadata": {"namespace": "kube-system", "name": "ca"},
        "spec": {"containers": list(containers)},
        "status": {
            "phase": "Running",
            "startTime": "2026-11-30T11:00:00Z",
            "containerStatuses": statuses or [],
        },
    }


def test_the_autoscaler_container_is_found_by_its_binary_else_the_first() -> None:
    """The binary named by a full path or bare (not first in the pod) is the process; with no
    container running it by command, the first container (an image whose entrypoint is the binary);
    a pod with no container runs nothing."""
    sidecar = {"name": "sidecar", "command": ["/pause"], "args": ["--scan-interval=1s"]}
    for command in (["/usr/local/bin/cluster-autoscaler"], ["cluster-autoscaler"]):
        ca = {"name": "ca", "command": command, "args": ["--scan-interval=30s"]}
        found = process_of(_containers_pod(sidecar, ca))
        assert found == AutoscalerProcess("kube-system/ca", T0 - HOUR, "87600h", 315_360_000.0, "", 30.0)
    entrypoint = {"name": "ca", "args": ["--scan-interval=20s"]}
    found = process_of(_containers_pod(entrypoint, sidecar))
    assert found == AutoscalerProcess("kube-system/ca", T0 - HOUR, "87600h", 315_360_000.0, "", 20.0)
    assert process_of(_containers_pod(entrypoint)) == found
    assert process_of(_containers_pod()) is None


def test_the_autoscaler_containers_own_status_gives_its_start() -> None:
    """Of several container statuses, the one named like the autoscaler container gives the start."""
    ca = {"name": "ca", "command": ["./cluster-autoscaler"]}
    statuses = [
        {"name": "sidecar", "state": {"running": {"startedAt": "2026-11-30T10:00:00Z"}}},
        {"name": "ca", "state": {"running": {"startedAt": "2026-11-30T12:00:00Z"}}},
    ]
    found = process_of(_containers_pod({"name": "sidecar", "command": ["/pause"]}, ca, statuses=statuses))
    assert found is not None and found.started == T0


def test_a_node_with_other_taints_and_conditions_is_a_good_candidate() -> None:
    """Only cluster-autoscaler's deletion taint disqualifies a node; the Ready condition is found
    among the others, whatever their status."""
    node = {
        "spec": {"taints": [{"key": "dedicated", "value": "batch", "effect": "NoSchedule"}]},
        "status": {
            "conditions": [
                {"type": "MemoryPressure", "status": "False"},
                {"type": "Ready", "status": "True", "lastTransitionTime": "2026-11-30T11:00:00Z"},
            ]
        },
    }
    assert is_template_candidate(node, T0)


@pytest.mark.parametrize(
    ("expire_after", "period"),
    [
        (None, 900.0),  # unreadable: as if an hour
        (7200.0, 1800.0),  # a quarter
        (240.0, 60.0),  # a quarter, exactly the floor
        (100.0, 60.0),  # at least a minute
        (315_360_000.0, 3600.0),  # at most an hour
    ],
)
def test_the_refresh_period_is_a_quarter_of_the_memory_between_a_minute_and_an_hour(
    expire_after: float | None, period: float
) -> None:
    """refresh_period: a quarter of --node-info-cache-expire-time, at least 60 s, at most 3600 s;
    an hour's quarter when the flag is unreadable or no cluster-autoscaler runs."""
    found = AutoscalerProcess("kube-system/ca-1", T0, "x", expire_after, "", 10.0)
    assert refresh_period(found) == period
    assert refresh_period(None) == 900.0


def test_the_sighting_is_renewed_by_the_memorys_own_refresh_period() -> None:
    """With a 2h memory the sighting is kept for 30 minutes (not an hour's quarter, 15 minutes)."""
    short = process(expire="2h")
    first = next_memory(None, LIVE, short, T0 + HOUR, LOOKED_FOR)
    assert next_memory(first, LIVE, short, T0 + HOUR + 1000, LOOKED_FOR).last_seen == "2026-11-30T13:00:00Z"
    assert next_memory(first, LIVE, short, T0 + HOUR + 1800, LOOKED_FOR).last_seen == "2026-11-30T13:30:00Z"


def test_a_sighting_within_the_first_loop_is_renewed_and_one_at_its_end_is_kept() -> None:
    """A sighting before the autoscaler's first loop can be taken to have run (start + 89.4 s with
    the default flags) is written again; one after it is kept."""
    early = AutoscalerMemory(True, "", LIVE, "2026-11-30T12:01:29Z", "kube-system/ca-1")
    renewed = next_memory(early, LIVE, process(), T0 + 100, LOOKED_FOR)
    assert renewed.last_seen == "2026-11-30T12:01:40Z"
    at_end = AutoscalerMemory(True, "", LIVE, "2026-11-30T12:01:30Z", "kube-system/ca-1")
    assert next_memory(at_end, LIVE, process(), T0 + 100, LOOKED_FOR).last_seen == "2026-11-30T12:01:30Z"


def test_a_sighting_without_its_node_or_an_unreadable_flag_remembers_nothing_whole() -> None:
    """A recorded time with no node, or an expiry flag that cannot be read: nothing remembered, no
    expiry; the whole record."""
    timed = AutoscalerMemory(False, "", None, "2026-11-30T13:00:00Z")
    assert next_memory(timed, None, process(), T0 + 2 * HOUR, LOOKED_FOR) == AutoscalerMemory(
        remembers=False,
        reason="fitguard has not seen a live node of the group that cluster-autoscaler keeps",
        view=None,
        last_seen="2026-11-30T13:00:00Z",
        autoscaler="kube-system/ca-1",
        started="2026-11-30T12:00:00Z",
        expires="",
    )
    broken = AutoscalerProcess("kube-system/ca-1", T0, "x", None, "invalid duration 'x'")
    assert next_memory(seen_at(T0 + HOUR), None, broken, T0 + 2 * HOUR, LOOKED_FOR) == AutoscalerMemory(
        remembers=False,
        reason="--node-info-cache-expire-time unreadable (invalid duration 'x'): judged by its tags",
        view=LIVE,
        last_seen="2026-11-30T13:00:00Z",
        autoscaler="kube-system/ca-1",
        started="2026-11-30T12:00:00Z",
        expires="",
    )


def test_times_are_written_in_utc_whatever_the_local_zone(monkeypatch: pytest.MonkeyPatch) -> None:
    """format_time writes UTC with a Z even where the process runs in another time zone."""
    monkeypatch.setenv("TZ", "JST-9")
    time.tzset()
    try:
        assert format_time(T0 + 0.9) == "2026-11-30T12:00:00Z"
    finally:
        monkeypatch.undo()
        time.tzset()


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("", "expected an RFC 3339 time, got ''"),
        (5, "expected an RFC 3339 time, got 5"),
        ("2026-11-30T12:00:00", "expected an RFC 3339 time with its offset, got '2026-11-30T12:00:00'"),
        ("2026-11-30T12:00:00z", "Invalid isoformat string: '2026-11-30T12:00:00z'"),
    ],
)
def test_unreadable_times_are_refused_with_a_whole_message(value: Any, message: str) -> None:
    """parse_time refuses an empty value, a non-string, a time without its offset and a lowercase z
    (which NodeGroupTemplate validation refuses too)."""
    with pytest.raises(ValueError) as raised:
        parse_time(value)
    assert str(raised.value) == message


@pytest.mark.parametrize(("flag", "seconds"), [("-5s", 0.0), ("0", 0.0), ("soon", 10.0), ("1m", 60.0)])
def test_the_scan_interval_is_never_negative_and_defaults_when_unreadable(flag: str, seconds: float) -> None:
    """A negative --scan-interval counts as 0; an unreadable one as flags.go's 10 s default."""
    found = process_of(ca_pod(args=[f"--scan-interval={flag}"]))
    assert found is not None and found.scan_interval == seconds


def test_a_pod_without_namespace_or_name_is_named_default() -> None:
    """The process's pod is named namespace/name, the namespace `default` when missing."""
    pod = ca_pod()
    pod["metadata"] = {}
    found = process_of(pod)
    assert found is not None and found.pod == "default/"
