"""How `fitguard check` prints its results: text (one block per object, kubectl's wording), JSON,
and a JUnit XML report (one testcase per object) that CI systems show."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from collections import Counter
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TextIO

from fitguard.judge import AUDITED, DENIED, EXEMPT, UNJUDGED, WARNED, Judgement
from fitguard.manifests import Located

SKIPPED = "skipped"


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


def _indent(text: str, prefix: str = "    ") -> list[str]:
    return [prefix + line for line in text.splitlines()]


def render_text(results: list[Result], header: Mapping[str, str], out: TextIO) -> None:
    """One block per judged object: `file:line (document N)`, the object, the verdict as
    `kubectl apply` would print it; skipped objects are only counted."""
    for key, value in header.items():
        out.write(f"# {key}: {value}\n")
    for result in results:
        judgement = result.judgement
        if judgement is None:
            continue
        out.write(f"{result.source.location}: {result.subject}: {judgement.verdict}\n")
        for warning in judgement.warnings:
            out.write(f"  Warning: {warning}\n")
        if judgement.verdict == DENIED:
            lines = judgement.message.splitlines() or [""]
            out.write(
                f'  Error from server (Forbidden): admission webhook "{judgement.webhook}" denied the '
                f"request: {lines[0]}\n"
            )
            out.writelines(line + "\n" for line in _indent("\n".join(lines[1:])))
        elif judgement.verdict in (AUDITED, EXEMPT):
            label = "audit finding (mode audit: admitted)" if judgement.verdict == AUDITED else "exempt"
            lines = judgement.message.splitlines() or [""]
            out.write(f"  {label}: {lines[0]}\n")
            out.writelines(line + "\n" for line in _indent("\n".join(lines[1:])))
    out.write(summary_line(results) + "\n")


def render_json(results: list[Result], header: Mapping[str, str], out: TextIO) -> None:
    body = {
        **header,
        "results": [result.to_json() for result in results],
        "summary": summary(results),
        "abstentions": abstentions(results),
    }
    json.dump(body, out, indent=2)
    out.write("\n")


def render_junit(results: list[Result], header: Mapping[str, str], out: TextIO) -> None:
    """JUnit XML: one testsuite, one testcase per object; a denial is a failure, a skipped kind
    a skipped testcase, warnings and audit findings go to system-out."""
    counts = summary(results)
    suite = ET.Element(
        "testsuite",
        name="fitguard check",
        tests=str(len(results)),
        failures=str(counts[DENIED]),
        errors="0",
        skipped=str(counts[SKIPPED]),
    )
    properties = ET.SubElement(suite, "properties")
    for key, value in header.items():
        ET.SubElement(properties, "property", name=key, value=value)
    for result in results:
        case = ET.SubElement(
            suite,
            "testcase",
            classname=result.source.file,
            name=f"{result.subject} ({result.source.location})",
        )
        judgement = result.judgement
        if judgement is None:
            ET.SubElement(case, "skipped", message=f"fitguard does not judge {result.source.obj.get('kind')}")
            continue
        if judgement.verdict == DENIED:
            failure = ET.SubElement(
                case, "failure", message=judgement.message.splitlines()[0] if judgement.message else "denied"
            )
            failure.set("type", "denied")
            failure.text = judgement.message
        notes = [f"Warning: {w}" for w in judgement.warnings]
        if judgement.verdict in (AUDITED, EXEMPT):
            notes.append(f"{judgement.verdict}: {judgement.message}")
        if notes:
            ET.SubElement(case, "system-out").text = "\n".join(notes)
    root = ET.Element("testsuites", tests=str(len(results)), failures=str(counts[DENIED]))
    root.append(suite)
    ET.indent(root)
    out.write('<?xml version="1.0" encoding="UTF-8"?>\n')
    out.write(ET.tostring(root, encoding="unicode"))
    out.write("\n")


RENDERERS = {"text": render_text, "json": render_json, "junit": render_junit}
