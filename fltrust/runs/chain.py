"""The record chain's primitives: the audit key, the canonical JSON a record is hashed as, one link
of the chain, the per-field digests that name an edit, and the check of a ``summary.json`` against
its own link. :mod:`fltrust.runs.audit` (``fltrust audit``), :class:`~fltrust.runs.RunRecorder`,
:func:`~fltrust.runs.load_run` and the paper results (:mod:`fltrust.repro.results`) all use these;
they read no run folder.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

__all__ = [
    "AUDIT_KEY_ENV",
    "AUDIT_KEY_FILE_ENV",
    "INTEGRITY",
    "audit_key",
    "canonical_json",
    "edited_fields",
    "entry_edits",
    "field_digests",
    "record_link",
    "summary_edits",
]


AUDIT_KEY_ENV = "FLTRUST_AUDIT_KEY"
"""Environment variable holding an optional audit key (its text): the record chain becomes an HMAC."""

AUDIT_KEY_FILE_ENV = "FLTRUST_AUDIT_KEY_FILE"
"""Environment variable naming a file whose content (surrounding whitespace stripped) is the audit key."""

INTEGRITY = "integrity"
"""Key of the record-chain entry in every ``rounds.jsonl`` line and in ``summary.json``."""


def audit_key() -> bytes | None:
    """The optional audit key: ``$FLTRUST_AUDIT_KEY``, else the content of ``$FLTRUST_AUDIT_KEY_FILE``.

    Returns
    -------
    bytes or None
        None when neither is set (the record chain is then a plain SHA-256 chain).

    Raises
    ------
    ValueError
        Both are set, or the key file is unreadable or empty.
    """
    text, file = os.environ.get(AUDIT_KEY_ENV), os.environ.get(AUDIT_KEY_FILE_ENV)
    if text and file:
        raise ValueError(f"set {AUDIT_KEY_ENV} or {AUDIT_KEY_FILE_ENV}, not both")
    if file:
        try:
            key = Path(file).expanduser().read_bytes().strip()
        except OSError as exc:
            raise ValueError(f"{AUDIT_KEY_FILE_ENV}={file}: cannot read the audit key file "
                             f"({exc.strerror or exc})") from None
        if not key:
            raise ValueError(f"{AUDIT_KEY_FILE_ENV}={file}: the audit key file is empty")
        return key
    return text.encode() if text else None


def canonical_json(value: Any) -> bytes:
    """The bytes a record is hashed as: JSON with sorted keys and no spaces.

    >>> canonical_json({"b": [1, 0.5], "a": None})
    b'{"a":null,"b":[1,0.5]}'
    """
    return json.dumps(value, sort_keys=True, separators=(",", ":")).encode()


def record_link(previous: str, content: Any, key: bytes | None = None) -> str:
    """One link of the record chain: ``sha256(previous link + sha256(canonical JSON of content))``,
    an HMAC-SHA256 with ``key`` when one is given. Round 0 starts from the empty string.

    >>> record_link("", {"round": 0}) == record_link("", {"round": 0}) != record_link("", {"round": 1})
    True
    """
    message = (previous + hashlib.sha256(canonical_json(content)).hexdigest()).encode()
    if key is None:
        return hashlib.sha256(message).hexdigest()
    return hmac.new(key, message, hashlib.sha256).hexdigest()


def field_digests(content: dict[str, Any], depth: int = 3) -> dict[str, str]:
    """Short SHA-256 (8 hex digits) of every field, nested mappings down to ``depth`` levels
    (``server_metrics.aux_accuracy``).

    Stored beside each link only to NAME what an edit changed; the link covers the full content.

    >>> sorted(field_digests({"round": 1, "server_metrics": {"aux_loss": 0.5}}))
    ['round', 'server_metrics.aux_loss']
    """
    out: dict[str, str] = {}
    for name, value in content.items():
        if isinstance(value, dict) and value and depth > 1:
            out.update({f"{name}.{k}": v for k, v in field_digests(value, depth - 1).items()})
        else:
            out[name] = hashlib.sha256(canonical_json(value)).hexdigest()[:8]
    return out


def edited_fields(content: dict[str, Any], recorded: Any) -> list[str]:
    """Names of the fields whose digest differs from the recorded ones (added and removed fields too)."""
    now = field_digests(content)
    recorded = recorded if isinstance(recorded, dict) else {}
    return sorted(name for name in set(now) | set(recorded) if now.get(name) != recorded.get(name))


def _algorithm(key: bytes | None) -> str:
    return "sha256" if key is None else "hmac-sha256"


def _summary_link(head: str, body: dict[str, Any], files: dict[str, str], algorithm: str,
                  key: bytes | None) -> str:
    """The summary's link: chains the summary (without its integrity entry) and the file hashes
    onto the head of the record chain."""
    return record_link(head, {"summary": body, "files": files, "algorithm": algorithm}, key)


def summary_edits(summary: dict[str, Any], key: bytes | None = None) -> list[str] | None:
    """What was edited in a ``summary.json`` after the run, checked against its own integrity entry.

    Only the summary's link is recomputed (the file hashes it lists are not re-read: that is
    :func:`audit_run`), so this is cheap enough for every :func:`~fltrust.runs.load_run`.

    Parameters
    ----------
    summary : dict
        The parsed ``summary.json``.
    key : bytes, optional
        The audit key; default :func:`audit_key` (a bad key setting skips the check).

    Returns
    -------
    list of str or None
        None when it verifies or cannot be checked here (no integrity entry: a run written before
        record hashing; a keyed chain without the key, or a key for an unkeyed chain). Otherwise the
        names of the edited fields (empty when only the integrity entry itself was changed).

    Examples
    --------
    >>> body = {"status": "complete", "wall_time_s": 3.0}
    >>> link = _summary_link("", body, {}, "sha256", None)
    >>> summary = {**body, INTEGRITY: {"algorithm": "sha256", "record_chain": "", "files": {}, "link": link,
    ...                                "fields": field_digests(body)}}
    >>> summary_edits(summary, None) is None
    True
    >>> summary_edits({**summary, "wall_time_s": 0.5}, None)
    ['wall_time_s']
    """
    def link(body: dict[str, Any], closing: dict[str, Any], key: bytes | None) -> str:
        listed = closing.get("files")
        files: dict[str, str] = listed if isinstance(listed, dict) else {}
        return _summary_link(str(closing.get("record_chain")), body, files, _algorithm(key), key)

    return entry_edits(summary, link, key)


def entry_edits(data: dict[str, Any], link: Callable[[dict[str, Any], dict[str, Any], bytes | None], str],
                key: bytes | None = None) -> list[str] | None:
    """What was edited in ``data`` after it was written, checked against its own ``integrity`` entry.

    Parameters
    ----------
    data : dict
        A parsed record holding an ``integrity`` entry (``summary.json``, a paper result).
    link : callable
        ``link(body, entry, key)``: the link the record's body (``data`` without the entry) should have.
    key : bytes, optional
        The audit key; default :func:`audit_key` (a bad key setting skips the check).

    Returns
    -------
    list of str or None
        None when it verifies or cannot be checked here (no entry; a keyed entry without the key,
        or a key for an unkeyed entry); otherwise the names of the edited fields
        (:func:`edited_fields`; empty when only the entry itself was changed).
    """
    closing = data.get(INTEGRITY)
    if not isinstance(closing, dict):
        return None
    if key is None:
        try:
            key = audit_key()
        except ValueError:
            return None
    if closing.get("algorithm") != _algorithm(key):
        return None
    body = {k: v for k, v in data.items() if k != INTEGRITY}
    if link(body, closing, key) == closing.get("link"):
        return None
    return edited_fields(body, closing.get("fields"))
