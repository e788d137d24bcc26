"""cluster-autoscaler's taint flags and what they take out of a template, case by case, restated from
its source and its own unit tests.

Sources: kubernetes-sigs/cluster-autoscaler at 33c3f97b (2026-08-21), where the core now lives:
pkg/utils/taints/taints.go (NewTaintConfig, IsStartupTaint, IsStatusTaint, SanitizeTaints,
FilterOutNodesWithStartupTaints) and its taints_test.go; pkg/config/flags/flags.go
(AutoscalingFlags.AddFlags, AutoscalingFlags.Options) and its flags_test.go;
pkg/simulator/node_info_utils.go (SanitizedTemplateNodeInfoFromNodeGroup, createSanitizedNode);
pkg/processors/nodeinfosprovider/mixed_nodeinfos_processor.go (isNodeGoodTemplateCandidate). The same
files at kubernetes/autoscaler f7bb0c36 (cluster-autoscaler/utils/taints, cluster-autoscaler/config/
flags, where the flags were Go `flag.Var` multi-string flags: each occurrence appended, no comma
split) agree. spf13/pflag v1.0.10 (0491e570, the version both go.mod files pin): string_array.go
(stringArrayValue.Set: the first occurrence replaces the default, each next one appends, the value
whole) and flag.go (parseLongArg: `--f=v`, or `--f v` taking the next word). cluster-autoscaler's
AWS provider at kubernetes/autoscaler 55c37cd5: cloudprovider/aws/aws_manager.go
(buildNodeFromTemplate, extractTaintsFromAsg).

`upstream` names the file and function each case restates; `test`, when present, the upstream test
it follows. Taints are [key, value, effect]; every expected value is whole (the complete options,
the complete taint list, in order).
"""

from __future__ import annotations

from typing import Any

CORE = "kubernetes-sigs/cluster-autoscaler "
AWS = "kubernetes/autoscaler cluster-autoscaler/cloudprovider/aws/"
PFLAG = "spf13/pflag v1.0.10 "
TAINTS_GO = CORE + "pkg/utils/taints/taints.go "
FLAGS_GO = CORE + "pkg/config/flags/flags.go "
TAINT = "k8s.io/cluster-autoscaler/node-template/taint/"
IGNORE_PREFIX = "ignore-taint.cluster-autoscaler.kubernetes.io/"
STARTUP_PREFIX = "startup-taint.cluster-autoscaler.kubernetes.io/"
STATUS_PREFIX = "status-taint.cluster-autoscaler.kubernetes.io/"
CA = "./cluster-autoscaler"
NONE: dict[str, list[str]] = {"startup_taints": [], "startup_taint_prefixes": [], "status_taints": []}

# The command line (the container's command and args, as the chart writes them) -> the taint options
# NewTaintConfig is built from: startup taints (a set: --ignore-taint's then --startup-taint's),
# the extra startup prefixes (in order) and the status taints (a set). Expected sets are sorted.
FLAGS: list[dict[str, Any]] = [
    {
        "id": "no-taint-flags",
        "upstream": FLAGS_GO + "AddFlags (each of the four defaults to an empty array)",
        "input": [CA, "--cloud-provider=aws", "--scan-interval=10s"],
        "expected": NONE,
    },
    {
        "id": "startup-taint-with-equals",
        "upstream": FLAGS_GO + "AddFlags (--startup-taint), Options (StartupTaints)",
        "input": [CA, "--startup-taint=node.cilium.io/agent-not-ready"],
        "expected": {**NONE, "startup_taints": ["node.cilium.io/agent-not-ready"]},
    },
    {
        "id": "startup-taint-value-as-the-next-word",
        "upstream": PFLAG + "flag.go parseLongArg ('--flag arg')",
        "input": [CA, "--startup-taint", "node.cilium.io/agent-not-ready", "--v=4"],
        "expected": {**NONE, "startup_taints": ["node.cilium.io/agent-not-ready"]},
    },
    {
        "id": "the-next-word-is-the-value-even-when-it-looks-like-a-flag",
        "upstream": PFLAG + "flag.go parseLongArg (a required value takes the next word as it is)",
        "input": [CA, "--startup-taint", "--status-taint=b"],
        "expected": {**NONE, "startup_taints": ["--status-taint=b"]},
    },
    {
        "id": "repeated-startup-taints-all-count",
        "upstream": PFLAG + "string_array.go stringArrayValue.Set; " + FLAGS_GO + "AddFlags (StringArrayVar)",
        "input": [
            CA,
            "--startup-taint=a",
            "--scan-interval=10s",
            "--startup-taint",
            "b",
            "--startup-taint=a",
        ],
        "expected": {**NONE, "startup_taints": ["a", "b"]},
    },
    {
        "id": "a-comma-list-is-one-key",
        "upstream": PFLAG + "string_array.go stringArrayValue.Set (no CSV split, unlike StringSlice)",
        "input": [CA, "--startup-taint=a,b", "--status-taint=c,d"],
        "expected": {**NONE, "startup_taints": ["a,b"], "status_taints": ["c,d"]},
    },
    {
        "id": "ignore-taint-is-merged-into-the-startup-taints",
        "upstream": FLAGS_GO + "Options (StartupTaints = slices.Concat(ignoreTaints, startupTaints))",
        "input": [CA, "--startup-taint=s", "--ignore-taint=i1", "--ignore-taint", "i2"],
        "expected": {**NONE, "startup_taints": ["i1", "i2", "s"]},
    },
    {
        "id": "status-taints",
        "upstream": FLAGS_GO + "AddFlags (--status-taint), Options (StatusTaints)",
        "input": [CA, "--status-taint=maintenance", "--status-taint", "draining.example.com"],
        "expected": {**NONE, "status_taints": ["draining.example.com", "maintenance"]},
    },
    {
        "id": "startup-taint-prefix",
        "upstream": FLAGS_GO + "AddFlags (--startup-taint-prefix), Options (StartupTaintPrefixes)",
        "test": "flags_test.go TestAutoscalingFlagsAllPossible (--startup-taint-prefix=transient)",
        "input": [CA, "--startup-taint-prefix=transient", "--startup-taint-prefix", "readiness.k8s.io/"],
        "expected": {**NONE, "startup_taint_prefixes": ["transient", "readiness.k8s.io/"]},
    },
    {
        "id": "underscores-read-as-dashes",
        "upstream": "k8s.io/component-base cli/flag InitFlags, WordSepNormalizeFunc",
        "input": [
            CA,
            "--startup_taint=a",
            "--status_taint=b",
            "--ignore_taint=c",
            "--startup_taint_prefix=d/",
        ],
        "expected": {"startup_taints": ["a", "c"], "startup_taint_prefixes": ["d/"], "status_taints": ["b"]},
    },
    {
        "id": "nothing-after-double-dash",
        "upstream": PFLAG + "flag.go parseArgs ('--' ends the flags)",
        "input": [CA, "--status-taint=kept", "--", "--startup-taint=after"],
        "expected": {**NONE, "status_taints": ["kept"]},
    },
    {
        "id": "a-last-flag-without-its-value-adds-none",
        "upstream": PFLAG + "flag.go parseLongArg (a required value missing is an error: the process "
        "does not run; the values before it are what a running one would have had)",
        "input": [CA, "--status-taint=kept", "--status-taint"],
        "expected": {**NONE, "status_taints": ["kept"]},
    },
    {
        "id": "look-alike-words-are-not-the-flags",
        "upstream": PFLAG + "flag.go parseLongArg (the whole name before '=' is looked up), parseShortArg "
        "(one dash is shorthand letters), parseArgs (a word without dashes is an argument)",
        "input": [
            CA,
            "--startup-taints=a",
            "--startup-taint-prefixes=b",
            "-startup-taint=c",
            "startup-taint=d",
        ],
        "expected": NONE,
    },
]

# Taint options (from flags) and a node's taints -> the taints SanitizeTaints keeps, in order.
SANITIZE: list[dict[str, Any]] = [
    {
        "id": "taints-test-sanitize-taints-through-new-taint-config",
        "upstream": TAINTS_GO + "SanitizeTaints, NewTaintConfig",
        "test": "taints_test.go TestSanitizeTaints: its taints and keys, but the config built by "
        "NewTaintConfig from flags, which also has the status prefix (the test's hand-built config has "
        "none, so there status-taint.*/some-taint is kept)",
        "input": {
            "argv": [CA, "--startup-taint=ignore-me", "--status-taint=status-me"],
            "taints": [
                [IGNORE_PREFIX + "another-taint", "myValue", "NoSchedule"],
                [STATUS_PREFIX + "some-taint", "myValue", "NoSchedule"],
                [STARTUP_PREFIX + "some-taint", "myValue", "NoSchedule"],
                ["test-taint", "test2", "NoSchedule"],
                ["ToBeDeletedByClusterAutoscaler", "1", "NoSchedule"],
                ["ignore-me", "1", "NoSchedule"],
                ["status-me", "1", "NoSchedule"],
                ["node.kubernetes.io/memory-pressure", "1", "NoSchedule"],
                [
                    IGNORE_PREFIX + "to-be-ignored",
                    "I-am-the-invisible-man-Incredible-how-you-can",
                    "NoSchedule",
                ],
            ],
        },
        "expected": [["test-taint", "test2", "NoSchedule"]],
    },
    {
        "id": "without-flags-only-what-every-cluster-autoscaler-drops",
        "upstream": TAINTS_GO + "SanitizeTaints, NewTaintConfig (the built-in prefixes, the deletion "
        "marks, NodeConditionTaints)",
        "input": {
            "argv": [CA],
            "taints": [
                ["node.cilium.io/agent-not-ready", "true", "NoExecute"],
                [STARTUP_PREFIX + "cni", "", "NoSchedule"],
                [STATUS_PREFIX + "maintenance", "", "NoSchedule"],
                [IGNORE_PREFIX + "legacy", "", "NoSchedule"],
                ["DeletionCandidateOfClusterAutoscaler", "1", "PreferNoSchedule"],
                ["node.cloudprovider.kubernetes.io/uninitialized", "true", "NoSchedule"],
                ["dedicated", "gpu", "NoSchedule"],
            ],
        },
        "expected": [
            ["node.cilium.io/agent-not-ready", "true", "NoExecute"],
            ["dedicated", "gpu", "NoSchedule"],
        ],
    },
    {
        "id": "each-flag-drops-its-key-and-nothing-else",
        "upstream": TAINTS_GO + "IsStartupTaint, IsStatusTaint (exact keys), SanitizeTaints",
        "input": {
            "argv": [CA, "--startup-taint=a", "--ignore-taint=b", "--status-taint=c"],
            "taints": [
                ["a", "", "NoSchedule"],
                ["a/x", "", "NoSchedule"],
                ["b", "1", "NoExecute"],
                ["c", "", "PreferNoSchedule"],
                ["cc", "", "NoSchedule"],
                ["A", "", "NoSchedule"],
            ],
        },
        "expected": [["a/x", "", "NoSchedule"], ["cc", "", "NoSchedule"], ["A", "", "NoSchedule"]],
    },
    {
        "id": "a-comma-list-flag-drops-neither-key",
        "upstream": PFLAG + "string_array.go; " + TAINTS_GO + "IsStartupTaint",
        "input": {
            "argv": [CA, "--startup-taint=a,b"],
            "taints": [["a", "", "NoSchedule"], ["b", "", "NoSchedule"], ["a,b", "", "NoSchedule"]],
        },
        "expected": [["a", "", "NoSchedule"], ["b", "", "NoSchedule"]],
    },
    {
        "id": "prefixes-match-the-start-of-the-key-only",
        "upstream": TAINTS_GO + "matchesAnyPrefix (strings.HasPrefix)",
        "input": {
            "argv": [CA, "--startup-taint-prefix=readiness.k8s.io/"],
            "taints": [
                ["readiness.k8s.io/not-ready", "", "NoSchedule"],
                ["x.readiness.k8s.io/not-ready", "", "NoSchedule"],
                ["readiness.k8s.io", "", "NoSchedule"],
                ["example.com/" + STARTUP_PREFIX + "x", "", "NoSchedule"],
                [STATUS_PREFIX.rstrip("/"), "", "NoSchedule"],
            ],
        },
        "expected": [
            ["x.readiness.k8s.io/not-ready", "", "NoSchedule"],
            ["readiness.k8s.io", "", "NoSchedule"],
            ["example.com/" + STARTUP_PREFIX + "x", "", "NoSchedule"],
            [STATUS_PREFIX.rstrip("/"), "", "NoSchedule"],
        ],
    },
    {
        "id": "an-empty-prefix-drops-every-taint",
        "upstream": TAINTS_GO + 'matchesAnyPrefix (strings.HasPrefix(key, "") is true)',
        "input": {
            "argv": [CA, "--startup-taint-prefix="],
            "taints": [["dedicated", "gpu", "NoSchedule"], ["", "", "NoSchedule"]],
        },
        "expected": [],
    },
]

# TestNewTaintConfigWithCustomPrefixes, case for case: the prefixes given, the key, IsStartupTaint.
IS_STARTUP: list[dict[str, Any]] = [
    {
        "id": name,
        "upstream": TAINTS_GO + "NewTaintConfig, IsStartupTaint",
        "test": "taints_test.go TestNewTaintConfigWithCustomPrefixes: " + name,
        "input": {"argv": [CA, *(f"--startup-taint-prefix={p}" for p in prefixes)], "key": key},
        "expected": expected,
    }
    for name, prefixes, key, expected in [
        ("empty custom prefixes - non-matching taint", [], "readiness.k8s.io/not-ready", False),
        ("custom prefix - matching taint", ["readiness.k8s.io/"], "readiness.k8s.io/not-ready", True),
        ("custom prefix - non-matching taint", ["readiness.k8s.io/"], "other.io/my-taint", False),
        (
            "built-in prefixes still work with custom prefix",
            ["readiness.k8s.io/"],
            STARTUP_PREFIX + "some-taint",
            True,
        ),
    ]
]

# TestFilterOutNodesWithStartupTaints, as what it means for the template cache: a Ready node with a
# startup taint is handed to MixedTemplateNodeInfoProvider as NotReady, so it is no good template
# candidate. Input: the flags and the Ready node's taints; expected: whether it is a candidate.
CANDIDATE: list[dict[str, Any]] = [
    {
        "id": name,
        "upstream": TAINTS_GO
        + "FilterOutNodesWithStartupTaints; "
        + CORE
        + "pkg/core/static_autoscaler.go obtainNodeLists; "
        + CORE
        + "pkg/processors/nodeinfosprovider/mixed_nodeinfos_processor.go isNodeGoodTemplateCandidate",
        **({"test": "taints_test.go TestFilterOutNodesWithStartupTaints: " + name} if from_test else {}),
        "input": {"argv": [CA, *flags], "taints": taints},
        "expected": expected,
    }
    for name, flags, taints, expected, from_test in [
        ("one startup taint, one ready untainted node", ["--startup-taint=my-taint"], [], True, True),
        (
            "one startup taint, one unready tainted node",
            ["--startup-taint=my-taint"],
            [["my-taint", "myValue", "NoSchedule"]],
            False,
            True,
        ),
        (
            "no startup taint, one node unready prefixed with startup taint prefix (Compatibility)",
            [],
            [[IGNORE_PREFIX + "another-taint", "myValue", "NoSchedule"]],
            False,
            True,
        ),
        (
            "no startup taint, one node unready prefixed with startup taint prefix",
            [],
            [[STARTUP_PREFIX + "another-taint", "myValue", "NoSchedule"]],
            False,
            True,
        ),
        (
            "no startup taint, two taints",
            [],
            [["first-taint", "myValue", "NoSchedule"], ["second-taint", "myValue", "NoSchedule"]],
            True,
            True,
        ),
        (
            "a status taint does not make a node unready",
            ["--status-taint=my-taint"],
            [["my-taint", "myValue", "NoSchedule"], [STATUS_PREFIX + "x", "", "NoSchedule"]],
            True,
            False,
        ),
    ]
]

# A group at zero: its ASG's taint tags and the running cluster-autoscaler's flags -> the taints of
# the template cluster-autoscaler's scheduler simulation tries the pod on.
TEMPLATE: list[dict[str, Any]] = [
    {
        "id": "startup-taint-tag-named-by-the-flag-is-not-on-the-template",
        "upstream": AWS
        + "aws_manager.go buildNodeFromTemplate, extractTaintsFromAsg; "
        + CORE
        + "pkg/simulator/node_info_utils.go SanitizedTemplateNodeInfoFromNodeGroup, createSanitizedNode",
        "input": {
            "argv": [CA, "--startup-taint=node.cilium.io/agent-not-ready"],
            "tags": [
                [TAINT + "node.cilium.io/agent-not-ready", "true:NoExecute"],
                [TAINT + "dedicated", "gpu:NoSchedule"],
            ],
        },
        "expected": [["dedicated", "gpu", "NoSchedule"]],
    },
    {
        "id": "the-same-tags-without-the-flag-keep-both",
        "upstream": AWS + "aws_manager.go extractTaintsFromAsg; " + TAINTS_GO + "SanitizeTaints",
        "input": {
            "argv": [CA],
            "tags": [
                [TAINT + "node.cilium.io/agent-not-ready", "true:NoExecute"],
                [TAINT + "dedicated", "gpu:NoSchedule"],
            ],
        },
        "expected": [
            ["node.cilium.io/agent-not-ready", "true", "NoExecute"],
            ["dedicated", "gpu", "NoSchedule"],
        ],
    },
    {
        "id": "prefixed-tags-need-no-flag-and-status-and-ignore-flags-drop-theirs",
        "upstream": AWS
        + "aws_manager.go extractTaintsFromAsg; "
        + TAINTS_GO
        + "NewTaintConfig, SanitizeTaints",
        "input": {
            "argv": [CA, "--status-taint=maintenance", "--ignore-taint=legacy"],
            "tags": [
                [TAINT + STARTUP_PREFIX + "cni", "pending:NoSchedule"],
                [TAINT + STATUS_PREFIX + "health", "x:NoSchedule"],
                [TAINT + "maintenance", "yes:NoExecute"],
                [TAINT + "legacy", "1:NoSchedule"],
                [TAINT + "team", "ml:NoSchedule"],
            ],
        },
        "expected": [["team", "ml", "NoSchedule"]],
    },
]
