"""The known-failures list (known_failures.json beside this file) and its strict matching.

Format: {"ops": {op_name: {dtype: {"reason": why, "signatures": [...]}}}, "modules": {...}}.
A signature names one failing sample and how it failed ("sample 8: forward: wrong values"):
the sample's index in the database's list, the failing check, and the kind of failure
(wrong values, wrong dtype/shape, wrong device, wrong strides, or the exception raised).

Matching is strict both ways:
- a listed pair must fail, and only with listed signatures: a failure with any other
  signature (another sample, another check, another exception) is an unexpected failure;
- a listed pair that passes is an unexpected pass (remove the entry).
Every entry carries a reason written by hand: what is wrong and why it is not fixed. An entry
whose signatures are not yet recorded (an empty list) matches no failure, so the next sweep
reports the pair until `--update-known-failures` records what it showed.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

KNOWN_FAILURES_PATH = Path(__file__).with_name("known_failures.json")
_SECTIONS = {"op": "ops", "module": "modules"}
# Reasons --update-known-failures writes for new entries: they fail the slice test's reason
# check until someone writes the real reason.
PLACEHOLDER = "TODO: say what is wrong and why it is not fixed"


def failure_category(text: str) -> str:
    """Which check failed and how, without numbers: "forward: wrong values",
    "grad: raised RuntimeError: …", "forward strides: wrong strides"."""
    if text.startswith("neuron run"):
        return text
    check = text.split(":")[0].split(" raised")[0]
    check = re.sub(r"\[\d+\]", "", check).strip()
    if " raised " in text:
        message = text.split(" raised ", 1)[1]
        message = re.sub(r"'[^']*'|\"[^\"]*\"|\d+", "…", message.split(" | ")[0])[:110]
        return f"{check} raised {message}"
    if "strides" in check:
        return f"{check}: wrong strides"
    if "result on" in text:
        return f"{check}: result on the wrong device"
    if re.search(r"CPU gave (torch\.|a tensor)|outputs, CPU gave", text):
        return f"{check}: wrong dtype/shape/count"
    if "not close" in text or "not equal" in text or "CPU gave" in text:
        return f"{check}: wrong values"
    return f"{check}: {re.sub(r'[0-9.e+-]+', '…', text)[:80]}"


def signature(failure: str) -> str:
    """ "sample 8: forward: wrong values" from a failure line "sample 8: forward: ..."."""
    match = re.match(r"^((?:sample|input) \d+(?: \([^)]*\))?): (.*)$", failure, re.S)
    if not match:
        return failure_category(failure)
    return f"{match.group(1)}: {failure_category(match.group(2))}"


def load(path: Path = KNOWN_FAILURES_PATH) -> dict[str, dict[str, dict[str, dict]]]:
    if not path.exists():
        return {"ops": {}, "modules": {}}
    data = json.loads(path.read_text())
    return {"ops": data.get("ops", {}), "modules": data.get("modules", {})}


def entry_for(known, kind: str, name: str, dtype: str) -> dict | None:
    """The entry {"reason", "signatures"} if (kind, name, dtype) is listed, else None."""
    return known[_SECTIONS[kind]].get(name, {}).get(dtype)


def reason_for(known, kind: str, name: str, dtype: str) -> str | None:
    entry = entry_for(known, kind, name, dtype)
    return None if entry is None else entry["reason"]


def entries(known):
    """Yields (kind, name, dtype, entry) for every entry."""
    for kind, section in _SECTIONS.items():
        for name, by_dtype in sorted(known[section].items()):
            for dtype, entry in sorted(by_dtype.items()):
                yield kind, name, dtype, entry


def _signatures_of(result: dict) -> list[str]:
    return result.get("signatures") or [signature(result["reason"])]


def unlisted_signatures(entry: dict, result: dict) -> list[str]:
    """The result's failure signatures that the entry does not list."""
    listed = set(entry.get("signatures", []))
    return [s for s in _signatures_of(result) if s not in listed]


def judge(known, result: dict) -> str:
    """ "expected" (passes and unlisted, or fails exactly as listed), "unexpected failure"
    (fails unlisted, or with an unlisted signature) or "unexpected pass"."""
    entry = entry_for(known, result["kind"], result["name"], result["dtype"])
    failed = result["status"] == "fail"
    if entry is None:
        return "unexpected failure" if failed else "expected"
    if not failed:
        return "unexpected pass"
    return "unexpected failure" if unlisted_signatures(entry, result) else "expected"


def mismatches(known, results) -> tuple[list, list]:
    """(unexpected failures, unexpected passes) of the results against the list. Pairs
    that were not run (e.g. filtered out) are not judged."""
    verdicts = [(judge(known, r), r) for r in results]
    return (
        [r for v, r in verdicts if v == "unexpected failure"],
        [r for v, r in verdicts if v == "unexpected pass"],
    )


def updated(known, results) -> dict:
    """The list rewritten from results: failing pairs are listed with the signatures they
    showed, keeping reasons already written (new ones get PLACEHOLDER); passing entries are
    dropped; entries for pairs that were not run are kept as they are."""
    ran = {(r["kind"], r["name"], r["dtype"]): r for r in results}
    out: dict[str, dict[str, dict[str, dict]]] = {"ops": {}, "modules": {}}
    for kind, name, dtype, entry in entries(known):
        if (kind, name, dtype) not in ran:
            out[_SECTIONS[kind]].setdefault(name, {})[dtype] = entry
    for (kind, name, dtype), r in ran.items():
        if r["status"] != "fail":
            continue
        previous = entry_for(known, kind, name, dtype) or {}
        out[_SECTIONS[kind]].setdefault(name, {})[dtype] = {
            "reason": previous.get("reason", PLACEHOLDER),
            "signatures": sorted(set(_signatures_of(r))),
        }
    for section in out.values():
        for name in list(section):
            section[name] = dict(sorted(section[name].items()))
    return {k: dict(sorted(v.items())) for k, v in out.items()}


def save(known, path: Path = KNOWN_FAILURES_PATH) -> None:
    header = {
        "_comment": (
            "Known conformance failures: {ops|modules: {name: {dtype: {reason, signatures}}}}. "
            "Strict: a listed pair that passes, or fails with a signature not listed, fails "
            "the suite. Regenerate with `python -m tests.conformance.report "
            "--update-known-failures`; write each reason by hand."
        )
    }
    path.write_text(
        json.dumps({**header, **known}, indent=1, sort_keys=False, ensure_ascii=False) + "\n"
    )
