"""`--systems` on the command line: system names with their factory arguments.

Standard library only, so `run_corpus.py --help` can show the syntax without importing more.
"""

from __future__ import annotations

import json
import re
import tomllib
from typing import Any


class SystemsFlagError(ValueError):
    pass


SYSTEMS_SYNTAX = """NAME[:KEY=VALUE][,KEY=VALUE...][,NAME...]: systems separated by commas; a
system's arguments follow its name after ':' and continue in later KEY=VALUE items. Values are TOML
or JSON scalars/arrays (true, 0.9, "x", ["crossref","dblp"]); anything else is a plain string.
Example: --systems 'field_match:closed_world=true,index_path=idx.parquet,prescreen'"""


def parse_systems_flag(text: str) -> list[dict[str, Any]]:
    """`--systems` text -> `[{"name": ..., "args": {...}}]` (see SYSTEMS_SYNTAX)."""
    systems: list[dict[str, Any]] = []
    for token in _split_top_level(text):
        name, colon, first_arg = token.partition(":")
        if re.match(r"[A-Za-z_]\w*\s*=", token):
            # KEY=VALUE continuing the previous system's arguments
            if not systems:
                raise SystemsFlagError(f"--systems: argument {token!r} comes before any system name ({SYSTEMS_SYNTAX})")
            _add_arg(systems[-1], token)
            continue
        name = name.strip()
        if not re.fullmatch(r"[A-Za-z_][\w.-]*", name):
            raise SystemsFlagError(f"--systems: {name!r} is not a system name ({SYSTEMS_SYNTAX})")
        systems.append({"name": name, "args": {}})
        if colon and first_arg.strip():
            _add_arg(systems[-1], first_arg)
    if not systems:
        raise SystemsFlagError("--systems: no system named")
    return systems


def _add_arg(system: dict[str, Any], item: str) -> None:
    key, eq, value = item.partition("=")
    key = key.strip()
    if not eq or not re.fullmatch(r"[A-Za-z_]\w*", key):
        raise SystemsFlagError(f"--systems: {item!r} is not KEY=VALUE (system {system['name']})")
    system["args"][key] = _scalar(value.strip())


def _scalar(text: str) -> Any:
    try:
        return tomllib.loads(f"v = {text}")["v"]
    except tomllib.TOMLDecodeError:
        pass
    try:
        return json.loads(text)
    except ValueError:
        return text


def _split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets, braces and quotes."""
    parts, depth, quote, current = [], 0, "", []
    for ch in text:
        if quote:
            quote = "" if ch == quote else quote
        elif ch in "\"'":
            quote = ch
        elif ch in "[{":
            depth += 1
        elif ch in "]}":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append("".join(current).strip())
            current = []
            continue
        current.append(ch)
    parts.append("".join(current).strip())
    return [p for p in parts if p]
