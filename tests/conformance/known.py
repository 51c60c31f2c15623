"""The known-failures list (known_failures.json beside this file) and its strict matching.

Format: {"ops": {op_name: {dtype: reason}}, "modules": {module_name: {dtype: reason}}}.
Every entry needs a reason. Entries are strict: a listed pair that no longer fails is an
"unexpected pass" and must be removed, exactly like a failure that is not listed.
"""

from __future__ import annotations

import json
from pathlib import Path

KNOWN_FAILURES_PATH = Path(__file__).with_name("known_failures.json")
_SECTIONS = {"op": "ops", "module": "modules"}


def load(path: Path = KNOWN_FAILURES_PATH) -> dict[str, dict[str, dict[str, str]]]:
    if not path.exists():
        return {"ops": {}, "modules": {}}
    data = json.loads(path.read_text())
    return {"ops": data.get("ops", {}), "modules": data.get("modules", {})}


def reason_for(known, kind: str, name: str, dtype: str) -> str | None:
    """The recorded reason if (kind, name, dtype) is a known failure, else None."""
    return known[_SECTIONS[kind]].get(name, {}).get(dtype)


def entries(known):
    """Yields (kind, name, dtype, reason) for every entry."""
    for kind, section in _SECTIONS.items():
        for name, by_dtype in sorted(known[section].items()):
            for dtype, reason in sorted(by_dtype.items()):
                yield kind, name, dtype, reason


def mismatches(known, results) -> tuple[list, list]:
    """(unexpected failures, unexpected passes) of the results against the list. Pairs
    that were not run (e.g. filtered out) are not judged."""
    unexpected_failures, unexpected_passes = [], []
    for r in results:
        listed = reason_for(known, r["kind"], r["name"], r["dtype"])
        if r["status"] == "fail" and listed is None:
            unexpected_failures.append(r)
        elif r["status"] != "fail" and listed is not None:
            unexpected_passes.append(r)
    return unexpected_failures, unexpected_passes


def short_reason(result: dict) -> str:
    """A one-line reason for a new entry, from the first failure it showed."""
    text = result["reason"]
    for noise in ("Tensor-likes are not close! | ", "Scalars are not close! | "):
        text = text.replace(noise, "values differ: ")
    return text[:240]


def updated(known, results) -> dict:
    """The list rewritten from results: still-failing entries keep their reasons, new
    failures are added with the failure they showed, passing entries are dropped. Entries
    for pairs that were not run are kept as they are."""
    ran = {(r["kind"], r["name"], r["dtype"]): r for r in results}
    out: dict[str, dict[str, dict[str, str]]] = {"ops": {}, "modules": {}}
    for kind, name, dtype, reason in entries(known):
        r = ran.get((kind, name, dtype))
        if r is None or r["status"] == "fail":
            out[_SECTIONS[kind]].setdefault(name, {})[dtype] = reason
    for (kind, name, dtype), r in ran.items():
        if r["status"] == "fail":
            section = out[_SECTIONS[kind]].setdefault(name, {})
            section.setdefault(dtype, short_reason(r))
    for section in out.values():
        for name in list(section):
            section[name] = dict(sorted(section[name].items()))
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def save(known, path: Path = KNOWN_FAILURES_PATH) -> None:
    header = {
        "_comment": (
            "Known conformance failures: {ops|modules: {name: {dtype: reason}}}. Strict: an "
            "entry that passes fails the suite until removed. Regenerate with "
            "`python -m tests.conformance.report --update-known-failures`; edit reasons by hand."
        )
    }
    path.write_text(json.dumps({**header, **known}, indent=1, sort_keys=False) + "\n")
