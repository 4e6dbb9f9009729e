"""A run's record as typed, versioned data: what was run, where, with which code, how it ended.

`RunRecord.from_stored(manifest, status, ...)` reads it from what a run stores (`manifest.json`,
`status.json`, the outputs' cost), so two runs can be compared field by field (`differences`).
The manifest is the source: `cluster/run_plan.py` builds a typed `RunManifest` (with
`record_version`, the structured code revision and the versions of the packages that change
answers, `answer_packages()`) and stores `RunManifest.to_stored()`; `RunManifest.from_stored`
reads a stored one back, keeping keys it does not know. Manifests older than that still read (their code is the revision label alone and their package
versions are "not recorded"); a manifest without the fields a record needs, or from a newer
record version, raises `RunRecordError` naming the file and the field.
"""

from __future__ import annotations

import hashlib
import json
from importlib import metadata
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

RECORD_VERSION = 1
#: Dependencies whose version can change a verdict (LLM calls, symbolic/unit checks, fuzzy matching).
ANSWER_PACKAGES: tuple[str, ...] = ("litellm", "sympy", "pint", "rapidfuzz")


class RunRecordError(ValueError):
    """A stored manifest that cannot be read as a run record; the message names file and field."""


def answer_packages() -> dict[str, str | None]:
    """Installed versions of `ANSWER_PACKAGES` (None where one is not installed)."""
    out: dict[str, str | None] = {}
    for name in ANSWER_PACKAGES:
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = None
    return out


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class CorpusRef(_Model):
    name: str = Field(description="corpus name")
    version: str = Field(description="corpus version (content hash or release)")
    split: str | None = Field(default=None, description="split the items came from")
    items: int | None = Field(default=None, description="items in the corpus")


class SystemRef(_Model):
    name: str = Field(description="registry name")
    label: str = Field(description="name shown in reports")
    answer_args: dict[str, Any] = Field(description="arguments that change answers (hashed into the run id)")
    config_hash: str = Field(description="hash of name + answer_args")
    runtime_args: dict[str, Any] = Field(default_factory=dict, description="recorded, not hashed")


class CodeRef(_Model):
    label: str = Field(description="`<sha>`, `<sha>+dirty` or `src-<hash>`")
    commit: str | None = None
    dirty: bool | None = Field(default=None, description="None: not recorded (older manifest)")
    packages: dict[str, str | None] | None = Field(default=None, description="None: not recorded")


class Outcome(_Model):
    status: str = Field(description="complete | incomplete ... | failed | running (no status.json yet)")
    items: int | None = Field(default=None, description="outputs stored")
    expected: int | None = Field(default=None, description="items in the corpus")
    errored: int | None = None
    failed_shards: int | None = None
    cost_usd: float | None = Field(default=None, description="sum of the outputs' cost; None when none stated")

    @property
    def complete(self) -> bool:
        return self.status == "complete" and self.items is not None and self.items == self.expected


class _Stored(BaseModel):
    """A part of a stored manifest: typed where known, other keys kept (older and newer writers)."""

    model_config = ConfigDict(frozen=True, extra="allow", coerce_numbers_to_str=True)


class ManifestCorpus(_Stored):
    name: str
    version: str
    split: str | None = None
    path: str | None = Field(default=None, description="the corpus file or folder as configured")
    items: int | None = None
    unreadable: int | None = Field(default=None, description="entries the loader could not read")
    summary: dict[str, Any] | None = Field(default=None, description="what the loader reports beside its rows "
                                           "(paper audits: failed papers, missing inputs, cells filled and skipped)")


class ManifestSystem(_Stored):
    name: str
    args: dict[str, Any]
    label: str | None = None
    config_hash: str | None = Field(default=None, description="hash of name + answer args (the run id's part)")


class RunManifest(_Stored):
    """What `manifest.json` holds: the run as planned (`cluster/run_plan.py` writes it, every
    reader of a stored run reads it). Fields written before a field existed read as None."""

    run_id: str
    schema_version: str | None = Field(default=None, description="storage.schemas.SCHEMA_VERSION")
    corpus: ManifestCorpus
    system: ManifestSystem
    snapshot: str
    shard_size: int | None = None
    num_shards: int | None = None
    code_revision: str | None = Field(default=None, description="the code's revision label")
    record_version: int = RECORD_VERSION
    code: dict[str, str | bool | None] | None = Field(default=None, description="storage.code_revision.CodeRevision")
    packages: dict[str, str | None] | None = None
    config: dict[str, Any] | None = Field(default=None, description="the run's whole config")
    provenance: dict[str, Any] | None = Field(default=None, description="what answered besides the arguments")

    @classmethod
    def from_stored(cls, manifest: dict[str, Any], source: str = "manifest.json") -> RunManifest:
        """The typed manifest of a stored run; `RunRecordError` names the file and field it lacks."""
        version = manifest.get("record_version", RECORD_VERSION)
        if not isinstance(version, int) or version > RECORD_VERSION:
            raise RunRecordError(f"{source}: record_version {version!r} is newer than this code reads "
                                 f"(<= {RECORD_VERSION}); update scrutineer to read it")  # fmt: skip
        for key in ("run_id", "corpus", "system", "snapshot"):
            if key not in manifest:
                raise RunRecordError(f"{source}: no {key!r} field: not a run manifest, or written by a scrutineer "
                                     "older than run ids (re-run it to get a comparable record)")  # fmt: skip
        system = manifest["system"]
        if not isinstance(system, dict) or "name" not in system or "args" not in system:
            raise RunRecordError(f"{source}: field 'system' lacks 'name' or 'args'")
        try:
            return cls.model_validate(manifest)
        except ValueError as exc:
            raise RunRecordError(f"{source}: malformed field: {exc}") from None

    def to_stored(self) -> dict[str, Any]:
        """The JSON object `manifest.json` holds (fields this writer set, then keys kept from a reader)."""
        return self.model_dump(exclude_unset=True)


class RunRecord(_Model):
    record_version: int = RECORD_VERSION
    run_id: str
    corpus: CorpusRef
    system: SystemRef
    snapshot: str
    storage_uri: str = Field(description="where the run's records live")
    code: CodeRef
    outcome: Outcome

    @classmethod
    def from_stored(cls, manifest: RunManifest | dict[str, Any], status: dict[str, Any] | None, *, storage_uri: str,
                    runtime_arg_names: tuple[str, ...] | None = None, default_args: dict[str, Any] | None = None,
                    cost_usd: float | None = None,
                    source: str = "manifest.json") -> RunRecord:  # fmt: skip
        """The record of a stored run. `runtime_arg_names` splits the system's args (the registry's
        declared runtime args); without it the manifest's `system.runtime_args` is used, else none.
        `default_args` (the factory's defaults) fill the arguments a run left unset, so a run that
        states a default and one that omits it have the same answer arguments."""
        if isinstance(manifest, dict):
            manifest = RunManifest.from_stored(manifest, source)
        system, corpus = manifest.system, manifest.corpus
        args = dict(system.args)
        stored_runtime = (system.model_extra or {}).get("runtime_args")  # written by older planners
        runtime = set(runtime_arg_names if runtime_arg_names is not None else stored_runtime or ())
        answer = {k: v for k, v in {**(default_args or {}), **args}.items() if k not in runtime}
        code = manifest.code or {}
        label = str(code.get("label") or manifest.code_revision or "unknown")
        status = status or {}
        try:
            return cls(
                run_id=manifest.run_id,
                corpus=CorpusRef(name=corpus.name, version=corpus.version, split=corpus.split, items=corpus.items),
                system=SystemRef(name=system.name, label=system.label or system.name, answer_args=answer,
                                 config_hash=system.config_hash or args_hash(system.name, answer),
                                 runtime_args={k: v for k, v in args.items() if k in runtime}),
                snapshot=manifest.snapshot, storage_uri=storage_uri,
                code=CodeRef(label=label, commit=code.get("commit") or _commit_of(label), dirty=code.get("dirty"),
                             packages=manifest.packages),
                outcome=Outcome(status=status.get("status", "running"), items=status.get("items"),
                                expected=status.get("expected", corpus.items), errored=status.get("errored"),
                                failed_shards=status.get("failed_shards"), cost_usd=cost_usd),
            )  # fmt: skip
        except (KeyError, TypeError, ValueError) as e:
            raise RunRecordError(f"{source}: missing or malformed field {e}") from None

    def identity(self) -> dict[str, Any]:
        """What decides the answers, flattened to dotted keys: compare two records with `differences`."""
        out: dict[str, Any] = {"corpus.name": self.corpus.name, "corpus.version": self.corpus.version,
                               "system.name": self.system.name, "snapshot": self.snapshot,
                               "code.revision": self.code.label}  # fmt: skip
        out.update({f"system.args.{k}": _canon(v) for k, v in self.system.answer_args.items()})
        out.update({f"package.{k}": v for k, v in (self.code.packages or {}).items()})
        return out


def differences(a: RunRecord, b: RunRecord) -> list[tuple[str, Any, Any]]:
    """(field, value in a, value in b) for every answer-deciding field that differs (packages only
    when both records state them)."""
    ia, ib = a.identity(), b.identity()
    keys = sorted(set(ia) | set(ib))
    if a.code.packages is None or b.code.packages is None:
        keys = [k for k in keys if not k.startswith("package.")]
    return [(k, ia.get(k), ib.get(k)) for k in keys if ia.get(k) != ib.get(k)]


def args_hash(name: str, args: dict[str, Any]) -> str:
    canonical = json.dumps({"name": name, "args": args}, sort_keys=True, default=str)
    return hashlib.sha256(canonical.encode()).hexdigest()[:12]


def _canon(value: Any) -> Any:
    return json.dumps(value, sort_keys=True, default=str) if isinstance(value, dict | list | tuple) else value


def _commit_of(label: str) -> str | None:
    sha = label.removesuffix("+dirty")
    return sha if len(sha) == 40 and all(c in "0123456789abcdef" for c in sha) else None
