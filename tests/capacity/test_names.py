"""fitguard's wire vocabulary is defined once (capacity/names.py) and every component uses that one
definition: the label the controller writes is the label the webhook's guard names, by construction."""

from __future__ import annotations

import ast
from pathlib import Path

import capacity.defaults
import capacity.demand
import capacity.estimate
import capacity.guard
import capacity.names
import capacity.records
import controller.labels
import controller.scaling
import webhook.mutate
from capacity.names import (
    API_VERSION,
    EXHAUSTED_LABEL,
    TEMPLATE_KIND,
    TERMINAL_PHASES,
    VPC_CNI_CONFIG_NAME,
    VPC_CNI_CONFIG_NAMESPACE,
)
from kube.client import NODE_GROUP_TEMPLATES

ROOT = Path(__file__).resolve().parents[2]
PRODUCT_PACKAGES = ("capacity", "kube", "webhook", "controller", "certs", "fitguard")


def test_the_label_the_controller_writes_is_the_one_the_webhook_guards() -> None:
    """The exhausted label the books write on nodes, the one the scaling driver and the pure guard
    read, and the key of the webhook's DoesNotExist expression are one object, not equal copies."""
    written = controller.labels.EXHAUSTED_LABEL
    assert written is webhook.mutate.GUARD_EXPRESSION["key"]
    assert written is webhook.mutate.EXHAUSTED_LABEL
    assert written is capacity.guard.EXHAUSTED_LABEL
    assert written is capacity.demand.EXHAUSTED_LABEL
    assert written is capacity.estimate.EXHAUSTED_LABEL
    assert written is capacity.records.EXHAUSTED_LABEL
    assert written is controller.scaling.EXHAUSTED_LABEL
    assert written == EXHAUSTED_LABEL == "fitguard.io/branch-eni-exhausted"
    assert written is EXHAUSTED_LABEL


def test_the_wire_values() -> None:
    """The names keep the values the manifests, the CRD and upstream define (stated here on purpose)."""
    assert (API_VERSION, TEMPLATE_KIND) == ("fitguard.io/v1alpha1", "NodeGroupTemplate")
    assert (VPC_CNI_CONFIG_NAMESPACE, VPC_CNI_CONFIG_NAME) == ("kube-system", "amazon-vpc-cni")
    assert frozenset({"Succeeded", "Failed"}) == TERMINAL_PHASES
    assert NODE_GROUP_TEMPLATES.path() == "/apis/fitguard.io/v1alpha1/nodegrouptemplates"


def _string_constants(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text(), str(path))
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_no_product_module_spells_a_name_of_its_own() -> None:
    """No module outside capacity/names.py has a string literal equal to one of its values (a prose
    mention inside help text or a docstring is fine): a second definition would drift apart."""
    # Every name's value but those that are also ordinary names of other things: a namespace, the
    # program, the controller's Deployment and Lease.
    values = (
        {
            value
            for name, value in vars(capacity.names).items()
            if name.isupper()
            and isinstance(value, str)
            and value not in {"kube-system", "fitguard", "fitguard-controller"}
        }
        | set(TERMINAL_PHASES)
        | {"fitguard.io/"}
    )
    names_file = ROOT / "capacity" / "names.py"
    found = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for package in PRODUCT_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        if path != names_file
        for line, value in _string_constants(path)
        if value in values
    ]
    assert found == []


def test_no_product_module_spells_a_default_of_its_own() -> None:
    """The namespace, the Lease's name and the listen addresses are written once, in
    capacity/defaults.py: every flag and options object imports them. (The Lease's name is also
    the value of the templates' managed-by label, capacity/names.py, a different fact.)"""
    values = {value for name, value in vars(capacity.defaults).items() if name.isupper()}
    assert values == {"fitguard-system", "fitguard-controller", "0.0.0.0:8443", "0.0.0.0:8080"}
    allowed = {
        ROOT / "capacity" / "defaults.py": values,
        ROOT / "capacity" / "names.py": {"fitguard-controller"},
    }
    found = [
        f"{path.relative_to(ROOT)}:{line}: {value!r}"
        for package in PRODUCT_PACKAGES
        for path in sorted((ROOT / package).rglob("*.py"))
        for line, value in _string_constants(path)
        if value in values and value not in allowed.get(path, set())
    ]
    assert found == []
