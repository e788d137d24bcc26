"""How `fitguard check` prints its results: text (one block per object, kubectl's wording), JSON,
and a JUnit XML report (one testcase per object) that CI systems show."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO

from cmdline.safe_text import for_terminal, for_xml, terminal_lines
from fitguard.judge import AUDITED, DENIED, EXEMPT, UNJUDGED, WARNED, Judgement
from fitguard.manifests import Located
from webhook.mutate import Injected, Injection, Mutation

SKIPPED = "skipped"


@dataclass(frozen=True, slots=True)
class Problem:
    """An input that could not be judged at all: a manifest file, the state, the cluster. `message`
    is the one line `fitguard check` prints for it on standard error."""

    source: str
    message: str

    def to_json(self) -> dict[str, str]:
        return {"source": self.source, "message": self.message}


@dataclass(frozen=True, slots=True)
class Result:
    """One object of the input and its judgement (None: a kind the webhook does not judge)."""

    source: Located
    namespace: str
    judgement: Judgement | None

    @property
    def verdict(self) -> str:
        return self.judgement.verdict if self.judgement is not None else SKIPPED

    @property
    def subject(self) -> str:
        meta = self.source.obj.get("metadata") or {}
        name = str(meta.get("name") or meta.get("generateName") or "")
        scope = f"{self.namespace}/" if self.judgement is not None or meta.get("namespace") else ""
        return f"{self.source.obj.get('kind')} {scope}{name}"

    def to_json(self) -> dict[str, Any]:
        judgement = self.judgement or Judgement(SKIPPED)
        return {
            "file": self.source.file,
            "document": self.source.document,
            "item": self.source.item,
            "line": self.source.line,
            "apiVersion": self.source.obj.get("apiVersion"),
            "kind": self.source.obj.get("kind"),
            "namespace": self.namespace if self.judgement is not None else None,
            "name": (self.source.obj.get("metadata") or {}).get("name"),
            "verdict": judgement.verdict,
            "allowed": judgement.verdict != DENIED,
            "message": judgement.message,
            "warnings": list(judgement.warnings),
            "webhook": judgement.webhook or None,
            "abstained": judgement.abstained.value if judgement.abstained else None,
            "mutation": mutation_json(judgement.mutation, self.source.obj.get("kind") != "Pod"),
        }

    def mutation_lines(self) -> list[str]:
        """What /mutate does to the object's pods, one line per change (none: it changes nothing)."""
        mutation = self.judgement.mutation if self.judgement is not None else None
        if mutation is None:
            return []
        who = "each pod" if self.source.obj.get("kind") != "Pod" else "the pod"
        return [f"Mutation ({who}): {injected_text(i)}" for i in mutation.injected]


def injected_text(injected: Injected) -> str:
    """One change /mutate makes, as a person reads it."""
    if injected.kind is Injection.RESOURCE:
        return f'{injected.value}: "1" in {injected.field}'
    if injected.kind is Injection.GUARD:
        return f"{injected.value} in every required term of {injected.field}"
    if injected.kind is Injection.ANNOTATION_REMOVED:
        return f"{injected.value} removed from {injected.field}"
    return f"{injected.value} in {injected.field}"


def mutation_json(mutation: Mutation | None, each_pod: bool) -> dict[str, Any] | None:
    """`mutation` of `fitguard check -o json`: what /mutate does to the pod (`each_pod`: to each
    pod of a workload), each change and the JSON patch the API server applies; null for none."""
    if mutation is None:
        return None
    return {
        "appliesTo": "each pod" if each_pod else "pod",
        "injected": [{"kind": i.kind.value, "field": i.field, "value": i.value} for i in mutation.injected],
        "patch": mutation.patch,
    }


def summary(results: list[Result]) -> dict[str, int]:
    counts = Counter(result.verdict for result in results)
    return {
        verdict: counts.get(verdict, 0)
        for verdict in ("admitted", WARNED, AUDITED, EXEMPT, UNJUDGED, DENIED, SKIPPED)
    }


def abstentions(results: list[Result]) -> dict[str, int]:
    """The unjudged objects counted by why fitguard could not judge them."""
    counts = Counter(r.judgement.abstained.value for r in results if r.judgement and r.judgement.abstained)
    return dict(sorted(counts.items()))


def summary_line(results: list[Result]) -> str:
    counts = summary(results)
    judged = len(results) - counts[SKIPPED]
    parts = [f"{n} {verdict}" for verdict, n in counts.items() if n and verdict != SKIPPED]
    line = f"{judged} object(s) checked: {', '.join(parts) or 'none'}"
    unjudged = abstentions(results)
    if unjudged:
        line += " (not judged, admitted: " + ", ".join(f"{n} {why}" for why, n in unjudged.items()) + ")"
    return line + (
        f"; {counts[SKIPPED]} skipped (kinds the webhook does not judge)" if counts[SKIPPED] else ""
    )


def _indent(lines: list[str], prefix: str = "    ") -> list[str]:
    # the escaped lines hold no line break of any kind: splitlines only drops a trailing empty one
    return [prefix + line for line in "\n".join(lines).splitlines()]


def _denial_head(judgement: Judgement) -> str:
    """kubectl's words before the message: a webhook's denial, or the API server's own refusal
    (400: the object could not be decoded; 422: it is invalid, the message says so itself)."""
    if judgement.webhook:
        webhook = for_terminal(judgement.webhook)
        return f'Error from server (Forbidden): admission webhook "{webhook}" denied the request: '
    return "Error from server (BadRequest): " if judgement.code == 400 else ""


def render_text(
    results: list[Result],
    header: Mapping[str, str],
    out: TextIO,
    problems: Sequence[Problem] = (),
    show_mutation: bool = False,
) -> None:
    """One block per judged object: `file:line (document N)`, the object, the verdict as
    `kubectl apply` would print it (`show_mutation`: and what /mutate does to its pods, when it
    does anything); skipped objects are only counted. Everything taken from the
    input is escaped for the terminal (cmdline/safe_text.py): a message keeps its own line breaks,
    indented, and nothing else can start a line. `problems` go to standard error (fitguard/check.py)."""
    for key, value in header.items():
        out.write(f"# {for_terminal(key)}: {for_terminal(value)}\n")
    for result in results:
        judgement = result.judgement
        if judgement is None:
            continue
        where = f"{for_terminal(result.source.location)}: {for_terminal(result.subject)}"
        out.write(f"{where}: {judgement.verdict}\n")
        if show_mutation:
            out.writelines(f"  {for_terminal(line)}\n" for line in result.mutation_lines())
        for warning in judgement.warnings:
            out.write(f"  Warning: {for_terminal(warning)}\n")
        if judgement.verdict == DENIED:
            lines = terminal_lines(judgement.message)
            out.write(f"  {_denial_head(judgement)}{lines[0]}\n")
            out.writelines(line + "\n" for line in _indent(lines[1:]))
        elif judgement.verdict in (AUDITED, EXEMPT):
            label = "audit finding (mode audit: admitted)" if judgement.verdict == AUDITED else "exempt"
            lines = terminal_lines(judgement.message)
            out.write(f"  {label}: {lines[0]}\n")
            out.writelines(line + "\n" for line in _indent(lines[1:]))
    out.write(summary_line(results) + "\n")


def render_json(
    results: list[Result], header: Mapping[str, str], out: TextIO, problems: Sequence[Problem] = ()
) -> None:
    """JSON escapes every control character and, written as ASCII, every other one: nothing needs
    escaping here. `error` (the first problem's message, or null) says whether all input was judged."""
    body = {
        **header,
        "results": [result.to_json() for result in results],
        "summary": summary(results),
        "abstentions": abstentions(results),
        "error": problems[0].message if problems else None,
        "errors": [problem.to_json() for problem in problems],
    }
    json.dump(body, out, indent=2)
    out.write("\n")


def render_junit(
    results: list[Result], header: Mapping[str, str], out: TextIO, problems: Sequence[Problem] = ()
) -> None:
    """JUnit XML: one testsuite, one testcase per object; a denial is a failure, a skipped kind
    a skipped testcase, warnings and audit findings go to system-out; each input that could not be
    judged an error testcase. Names and messages are escaped where XML 1.0 forbids a character
    (cmdline/safe_text.py), so the report always parses."""
    counts = summary(results)
    suite = ET.Element(
        "testsuite",
        name="fitguard check",
        tests=str(len(results) + len(problems)),
        failures=str(counts[DENIED]),
        errors=str(len(problems)),
        skipped=str(counts[SKIPPED]),
    )
    properties = ET.SubElement(suite, "properties")
    for key, value in header.items():
        ET.SubElement(properties, "property", name=for_xml(key), value=for_xml(value))
    for result in results:
        _junit_case(suite, result)
    for problem in problems:
        case = ET.SubElement(
            suite, "testcase", classname=for_xml(problem.source), name=for_xml(f"{problem.source} (input)")
        )
        error = ET.SubElement(case, "error", message=for_xml(problem.message), type="input")
        error.text = for_xml(problem.message)
    root = ET.Element(
        "testsuites",
        tests=suite.get("tests", "0"),
        failures=str(counts[DENIED]),
        errors=str(len(problems)),
    )
    root.append(suite)
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")


def _junit_case(suite: ET.Element, result: Result) -> None:
    case = ET.SubElement(
        suite,
        "testcase",
        classname=for_xml(result.source.file),
        name=for_terminal(f"{result.subject} ({result.source.location})"),
    )
    judgement = result.judgement
    if judgement is None:
        message = f"fitguard does not judge {for_terminal(result.source.obj.get('kind'))}"
        ET.SubElement(case, "skipped", message=message)
        return
    if judgement.verdict == DENIED:
        first = judgement.message.split("\n")[0] if judgement.message else "denied"
        failure = ET.SubElement(case, "failure", message=for_terminal(first))
        failure.set("type", "denied")
        failure.text = for_xml(judgement.message)
    notes = [f"Warning: {w}" for w in judgement.warnings]
    if judgement.verdict in (AUDITED, EXEMPT):
        notes.append(f"{judgement.verdict}: {judgement.message}")
    if notes:
        ET.SubElement(case, "system-out").text = for_xml("\n".join(notes))


RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit}
