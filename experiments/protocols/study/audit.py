"""``gradlab study audit``: is a study's folder exactly what was registered?

:func:`audit` reads a study's folder (its ``preregistration.json`` and every job folder) and
returns an :class:`Audit`: a CONSORT-style flow per arm (registered -> started -> completed /
diverged / crashed / missing -> analysed) and one :class:`Check` per question, each a line:

* ``record``: the record's stored file texts hash to its pinned hashes, and its ``design`` is
  what its stored study file parses to (an edited ``design.primary`` fails here);
* ``record hash``: every run's ``record_sha256`` (schema 3) equals the record's SHA-256;
* ``timing``: ``registered_at`` is not in the future and every run started (``started_at``,
  schema 3) after it;
* ``git``: where the folder is in a git repository, the record was committed before the earliest
  run started (runs without start times: before the first commit of any of their summaries) and
  never changed since (one commit, no uncommitted edit);
* ``configs``: every run ran its arm's registered config (its ``config_sha256``, else every
  registered key against its ``config.yaml``);
* ``code``: the runs ran one code identity, the record's (deviations listed);
* ``plug-ins`` (only where the record pins an arm's plug-in): every run of a pinned plug-in's
  variant recorded its distribution at the pinned version;
* ``job set``: every run is one registered job (arm x seed), once, in the folder its name says.

What cannot be checked (runs from before these fields existed) is a line that says so, never a
pass in silence. ``pinned files`` compares the config files as they are now with the pinned ones:
a change there stops new runs (``gradlab sweep`` refuses), but it is no breach of runs already
made, which ``configs`` checks.
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
import subprocess
import tempfile
from collections import Counter
from pathlib import Path

import yaml

from experiments.base.errors import ConfigError
from experiments.jobs import (
    SUMMARY_FILE,
    Summary,
    config_fingerprint,
    file_sha256,
    flat_config,
    job_locked,
    job_name,
    parse_utc,
    read_summary,
)
from experiments.protocols.study.record import (
    RECORD,
    _arm_settings,
    _design,
    check_pinned,
    check_stored,
)

__all__ = ["ANALYSED", "Audit", "Check", "Flow", "audit"]

ANALYSED = ("completed", "diverged")
"""Statuses whose runs a table analyses (intention to treat: a diverged run is a result)."""


@dataclasses.dataclass(frozen=True)
class Check:
    """One question of the audit.

    Attributes:
      name: the question (``record``, ``timing``, ...).
      ok: False on a breach.
      line: what was found, one line (limits included).
    """

    name: str
    ok: bool
    line: str


@dataclasses.dataclass(frozen=True)
class Flow:
    """One arm's runs, CONSORT-style (counts of registered jobs, i.e. seeds)."""

    arm: str
    registered: int
    started: int
    completed: int
    diverged: int
    crashed: int  # failed, timeout, interrupted, or no readable summary
    missing: int  # registered, never started
    analysed: int  # completed + diverged
    running: int = 0  # started, not finished yet (a study in progress)


@dataclasses.dataclass(frozen=True)
class Audit:
    folder: Path
    study: str
    flow: tuple[Flow, ...]
    checks: tuple[Check, ...]
    not_in: int = 0  # registered runs not (yet) analysed: missing, running or not finished
    not_in_names: tuple[str, ...] = ()  # those runs by name (arm and seed, or folder and status)

    @property
    def breaches(self) -> list[Check]:
        return [c for c in self.checks if not c.ok]

    def lines(self) -> list[str]:
        """The audit as printed: the flow table, then one line per check."""
        head = ("arm", "registered", "started", "completed", "diverged", "running", "crashed",
                "missing", "analysed")  # fmt: skip
        rows = [head] + [(f.arm, *(str(getattr(f, k)) for k in head[1:])) for f in self.flow]
        total = ("all", *(str(sum(getattr(f, k) for f in self.flow)) for k in head[1:]))
        rows.append(total)
        width = [max(len(r[i]) for r in rows) for i in range(len(head))]
        out = [f"study {self.study}: {self.folder}"]
        out += ["  ".join(c.ljust(w) for c, w in zip(r, width, strict=True)).rstrip() for r in rows]
        out += [f"{'ok    ' if c.ok else 'BREACH'} {c.name}: {c.line}" for c in self.checks]
        verdict = "passed" if not self.breaches else f"{len(self.breaches)} breach(es)"
        out.append(f"audit {verdict}")
        return out


@dataclasses.dataclass(frozen=True)
class _Run:
    folder: str
    summary: Summary | None
    arm: str | None  # the registered arm it is, or None (outside)
    seed: int | None
    live: bool = False  # no summary yet, and a live job holds its lock: running, not crashed
    unreadable: bool = False  # a summary.json is there but is not a summary (garbage, a folder)


def _read_record(folder: Path) -> tuple[dict, bytes]:
    path = folder / RECORD
    if not path.is_file():
        raise ConfigError(f"{str(folder)!r} holds no {RECORD}: not a registered study's folder")
    raw = path.read_bytes()
    try:
        record = json.loads(raw)
        design = record["design"]
        design["name"], design["arms"], design["tasks" if "tasks" in design else "seeds"]
    except (json.JSONDecodeError, UnicodeDecodeError, KeyError, TypeError):
        raise ConfigError(f"corrupt pre-registration record {str(path)!r}") from None
    return record, raw


def _study_of(record: dict):
    """The design as its stored study file parses today (a temporary conf folder)."""
    from experiments.protocols.study.design import load_study

    name = record["design"]["name"]
    text = record.get("files", {}).get(f"study/{name}.yaml")
    if not isinstance(text, str):
        raise ConfigError(f"the record stores no study/{name}.yaml")
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "study" / f"{name}.yaml"
        path.parent.mkdir()
        path.write_text(text, encoding="utf-8")
        return load_study(name, tmp)


def _check_record(record: dict) -> tuple[Check, object | None]:
    try:
        check_stored(record, where=record["design"]["name"])
    except ConfigError as err:
        return Check("record", False, str(err)), None
    try:
        study = _study_of(record)
    except ConfigError as err:
        return Check("record", False, f"its stored study file does not parse: {err}"), None
    parsed = _design(study)
    changed = sorted(k for k, v in record["design"].items() if parsed.get(k) != v)
    if changed:
        return Check(
            "record",
            False,
            f"its design differs from its own pinned study file in: {', '.join(changed)} "
            "(the record was edited)",
        ), None
    return Check(
        "record", True, "stored files hash as pinned; design = its pinned study file"
    ), study


def _runs(folder: Path, study) -> list[_Run]:
    """Every job folder, each matched to the registered job its summary (or, without one, its
    folder's name) says it is: the same settings, a registered seed, its own folder."""
    jobs = {
        job_name({**_arm_settings(study, a, s.task), "seed": str(seed)}): (a, s.task, seed)
        for s in study.strata
        for a in study.arms
        for seed in s.seeds
    }
    out = []
    for job in sorted(p for p in folder.iterdir() if p.is_dir()):
        summary = read_summary(job)
        arm, task, seed = jobs.get(job.name, (None, None, None))
        if summary is not None:
            settings = {k: v for k, v in summary.overrides.items() if k != "seed"}
            if (
                arm is None
                or summary.job != job.name
                or summary.seed != seed
                or (settings != _arm_settings(study, arm, task))
            ):
                arm, seed = None, summary.seed
        elif arm is None and not (job / "config.yaml").exists():
            continue  # not a job folder (figures/, ...)
        live = summary is None and job_locked(job)
        if summary is None and not live and not any(job.iterdir()):
            continue  # an empty folder (a stopped launch left it): never started, so missing
        key = None if arm is None else study.arm_key(arm, task)
        unreadable = summary is None and (job / SUMMARY_FILE).exists()
        out.append(_Run(job.name, summary, key, seed, live, unreadable))
    return out


def _flow(study, runs: list[_Run]) -> tuple[Flow, ...]:
    out = []
    for stratum, arm in ((s, a) for s in study.strata for a in study.arms):
        key = study.arm_key(arm, stratum.task)
        mine = {r.seed: r for r in runs if r.arm == key}
        status = Counter(
            (r.summary.status if r.summary is not None else "running" if r.live else "unreadable")
            for r in mine.values()
        )
        analysed = status["completed"] + status["diverged"]
        running = status["running"]
        out.append(Flow(key, len(stratum.seeds), len(mine), status["completed"],
                        status["diverged"], len(mine) - analysed - running,
                        len(stratum.seeds) - len(mine), analysed, running))  # fmt: skip
    return tuple(out)


def _listed(names: list[str], limit: int = 3) -> str:
    more = f" (+{len(names) - limit} more)" if len(names) > limit else ""
    return ", ".join(names[:limit]) + more


def _check_job_set(study, runs: list[_Run]) -> Check:
    outside = [r.folder for r in runs if r.arm is None]
    seen = Counter((r.arm, r.seed) for r in runs if r.arm is not None)
    twice = sorted(f"{arm} seed {seed}" for (arm, seed), n in seen.items() if n > 1)
    problems = []
    if outside:
        problems.append(f"{len(outside)} run(s) outside the registered job set: {_listed(outside)}")
    if twice:
        problems.append(f"registered jobs run twice: {_listed(twice)}")
    if problems:
        return Check("job set", False, "; ".join(problems))
    return Check("job set", True, f"every run is one of the {study.n_jobs} registered jobs, once")


def _check_record_hash(runs: list[_Run], digest: str) -> Check:
    have = [r for r in runs if r.summary is not None and r.summary.record_sha256 is not None]
    bad = [r.folder for r in have if r.summary.record_sha256 != digest]
    if bad:
        carried = Counter(r.summary.record_sha256 for r in have)
        moved = (
            f"the record moved: every run carries {next(iter(carried))[:12]}..., the record "
            f"hashes {digest[:12]}..."
            if len(carried) == 1
            else f"runs moved: {len(bad)} of {len(have)} carry another hash than the record's"
        )
        return Check("record hash", False, f"{moved} ({_listed(bad)})")
    old = len([r for r in runs if r.summary is not None]) - len(have)
    limit = f"; {old} run(s) predate run identities: no record hash to compare" if old else ""
    return Check("record hash", True, f"{len(have)} run(s) carry the record's hash{limit}")


def _check_timing(
    runs: list[_Run], registered: dt.datetime | None
) -> tuple[Check, dt.datetime | None]:
    if registered is None:
        return Check("timing", False, "registered_at is missing or not a UTC time"), None
    if registered > dt.datetime.now(dt.UTC):
        return Check(
            "timing", False, f"registered_at {registered:%Y-%m-%dT%H:%M:%SZ} is in the future"
        ), None
    starts = {r.folder: parse_utc(r.summary.started_at) for r in runs if r.summary is not None}
    known = {k: v for k, v in starts.items() if v is not None}
    early = sorted(k for k, v in known.items() if v < registered)
    first = min(known.values()) if known else None
    if early:
        return Check("timing", False, f"{len(early)} run(s) started before registered_at: "
                     f"{_listed(early)}"), first  # fmt: skip
    if not starts:
        return Check("timing", True, "no run yet"), None
    if not known:
        return Check("timing", True, "no run start times (runs predate them): ordering checked "
                     "through git only"), None  # fmt: skip
    old = len(starts) - len(known)
    limit = f"; {old} run(s) without start times" if old else ""
    return Check("timing", True, f"{len(known)} run(s) started after registered_at{limit}"), first


def _git(folder: Path, *args: str) -> str | None:
    try:
        done = subprocess.run(["git", *args], cwd=folder, capture_output=True, text=True,
                              check=False, timeout=60)  # fmt: skip
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout.strip() if done.returncode == 0 else None


def _check_git(folder: Path, first_start: dt.datetime | None) -> Check:
    if _git(folder, "rev-parse", "--is-inside-work-tree") != "true":
        return Check("git", True, "not in a git repository: commit order not checked")
    if _git(folder, "rev-parse", "--is-shallow-repository") == "true":
        return Check("git", True, "a shallow clone (history cut): commit order not checked")
    log = _git(folder, "log", "--format=%H %cI", "--", RECORD)
    if not log:
        return Check("git", False, "the record is not committed")
    commits = [line.split() for line in log.splitlines()]
    if len(commits) > 1:
        return Check("git", False, f"the record was changed after its first commit "
                     f"({len(commits)} commits touch it; last {commits[0][0][:9]})")  # fmt: skip
    if _git(folder, "status", "--porcelain", "--", RECORD):
        return Check("git", False, "the record has an uncommitted change")
    sha, when = commits[0]
    committed = dt.datetime.fromisoformat(when)
    if first_start is not None:
        if committed > first_start:
            return Check("git", False, f"the record was committed ({when}, {sha[:9]}) after the "
                         f"earliest run started ({first_start:%Y-%m-%dT%H:%M:%SZ})")  # fmt: skip
        return Check("git", True, f"record committed once ({sha[:9]}, {when}) before the "
                     "earliest run started")  # fmt: skip
    added = _git(folder, "log", "--diff-filter=A", "--format=%H", "--", "*/summary.json")
    runs = added.splitlines() if added else []
    if not runs:
        return Check("git", True, f"record committed once ({sha[:9]}, {when}); no run committed")
    earliest = runs[-1]
    before = _git(folder, "merge-base", "--is-ancestor", sha, earliest) is not None
    if earliest == sha or not before:
        return Check("git", False, f"the record ({sha[:9]}) was not committed before the first "
                     f"commit of a run ({earliest[:9]})")  # fmt: skip
    return Check("git", True, f"record committed once ({sha[:9]}, {when}), before the first "
                 f"commit of a run ({earliest[:9]}); no run start times")  # fmt: skip


def _check_configs(folder: Path, record: dict, runs: list[_Run]) -> Check:
    registered = record.get("arm_configs", {})
    bad, unread, by_hash = [], [], 0
    for run in runs:
        if run.arm is None or run.summary is None:
            continue
        want = registered.get(run.arm)
        if not isinstance(want, dict):
            return Check("configs", False, f"the record has no config for arm {run.arm!r}")
        if run.summary.config_sha256 == config_fingerprint(want):
            by_hash += 1
            continue
        path = folder / run.folder / "config.yaml"
        try:
            ran = flat_config(yaml.load(path.read_text(encoding="utf-8"), Loader=_LOADER))
        except (OSError, yaml.YAMLError, TypeError, ValueError):
            unread.append(run.folder)
            continue
        differ = sorted(k for k, v in want.items() if k in ran and ran[k] != v)
        if differ:
            bad.append(f"{run.folder} ({', '.join(f'{k}={ran[k]!r}' for k in differ[:2])})")
    if bad:
        return Check("configs", False, f"{len(bad)} run(s) ran another config than their arm's "
                     f"registered one: {_listed(bad, 2)}")  # fmt: skip
    limit = f"; {len(unread)} without a readable config.yaml" if unread else ""
    return Check("configs", True, f"runs ran their arm's registered config ({by_hash} by config "
                 f"hash, the rest key by key against config.yaml){limit}")  # fmt: skip


_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def _check_code(record: dict, runs: list[_Run]) -> Check:
    pinned = (record.get("code") or {}).get("tree_sha256")
    have = [r for r in runs if r.summary is not None and r.summary.code is not None]
    trees = Counter(r.summary.code.tree_sha256 for r in have)
    limit = "" if pinned else "; the record pins no code (registered before code identities)"
    if (record.get("git") or {}).get("dirty"):
        limit += "; registered from a tree with uncommitted changes (git.dirty): its commit alone "
        limit += "does not give its code (its config files are pinned)"
    old = len([r for r in runs if r.summary is not None]) - len(have)
    if old:
        limit += f"; {old} run(s) predate code identities"
    if not have:
        return Check("code", True, "no run records its code" + limit)
    off = sorted(
        r.folder
        for r in have
        if r.summary.code.tree_sha256 != (pinned or trees.most_common(1)[0][0])
    )
    if off or len(trees) > 1:
        return Check("code", False, f"{len(trees)} code identities across runs; {len(off)} run(s) "
                     f"deviate from {'the record' if pinned else 'the most common'}: "
                     f"{_listed(off)}")  # fmt: skip
    return Check("code", True, f"{len(have)} run(s) ran one code identity"
                 + (", the record's" if pinned else "") + limit)  # fmt: skip


def _check_plugins(record: dict, runs: list[_Run]) -> list[Check]:
    """Where the record pins plug-ins (``plugins``), every run of a pinned variant recorded that
    distribution at that version (``versions["plugin:<distribution>"]``); no check otherwise."""
    pinned = record.get("plugins") or {}
    if not pinned:
        return []
    have = [r for r in runs if r.summary is not None and r.summary.variant in pinned]
    off = sorted(
        r.folder
        for r in have
        if r.summary.versions.get(f"plugin:{pinned[r.summary.variant].get('distribution')}")
        != pinned[r.summary.variant].get("version")
    )
    shown = ", ".join(f"{v} ({p.get('distribution')} {p.get('version')})" for v, p in
                      sorted(pinned.items()))  # fmt: skip
    if off:
        return [Check("plug-ins", False, f"{len(off)} of {len(have)} run(s) of the pinned "
                      f"plug-ins {shown} ran another version or none: {_listed(off)}")]  # fmt: skip
    return [Check("plug-ins", True, f"{len(have)} run(s) ran the pinned plug-ins {shown}")]


def _check_current(record: dict, config_dir: Path) -> Check:
    try:
        notes = check_pinned(record, config_dir=config_dir, where=record["design"]["name"])
    except ConfigError as err:
        return Check("pinned files", True, f"now: {err} (new runs are refused; not a breach of "
                     "runs already made, see configs)")  # fmt: skip
    return Check("pinned files", True, "the config files hash as pinned"
                 + (f" ({'; '.join(notes)})" if notes else ""))  # fmt: skip


def _check_identity(record: dict, runs: list[_Run]) -> Check:
    """In a folder whose record pins code, every ended run carries its full identity (schema 3:
    start and end times, code, config and record hashes), well formed: an end not before its
    start, no time in the future. A run rewritten as an older schema, or with a field removed or
    nulled, is a breach, not a run that "predates identities"."""
    if not (record.get("code") or {}).get("tree_sha256"):
        return Check("identity", True, "the record pins no code: run identities not required")
    now = dt.datetime.now(dt.UTC)
    bad = []
    for run in runs:
        s = run.summary
        if s is None or s.status == "running":
            continue
        start, end = parse_utc(s.started_at), parse_utc(s.ended_at)
        missing = [name for name, value in (
            ("schema 3", s.schema >= 3 or None), ("started_at", start), ("ended_at", end),
            ("code", s.code), ("config_sha256", s.config_sha256),
            ("record_sha256", s.record_sha256)) if value is None]  # fmt: skip
        if missing:
            bad.append(f"{run.folder} (no {', '.join(missing)})")
        elif end < start:
            bad.append(f"{run.folder} (ended before it started)")
        elif end > now or start > now:
            bad.append(f"{run.folder} (a time in the future)")
    if bad:
        return Check("identity", False, f"{len(bad)} run(s) without a well-formed identity under "
                     f"a record that pins code: {_listed(bad, 2)}")  # fmt: skip
    return Check("identity", True, "every ended run carries its full identity, its times in order")


def _deleted(folder: Path) -> list[str]:
    """Job folders of ``folder`` whose ``summary.json`` git has seen and that is gone now: deleted
    in the work tree (still in the index) or removed by a commit. Empty outside git."""
    if _git(folder, "rev-parse", "--is-inside-work-tree") != "true":
        return []
    gone = (_git(folder, "ls-files", "--deleted", "--", ".") or "").splitlines()
    gone += (_git(folder, "log", "--diff-filter=D", "--name-only", "--format=", "--", ".")
             or "").splitlines()  # fmt: skip
    jobs = {Path(p).parent.name for p in gone if Path(p).name == SUMMARY_FILE}
    return sorted(j for j in jobs if not (folder / j / SUMMARY_FILE).exists())


def _check_accounted(study, runs: list[_Run], folder: Path) -> tuple[Check, list[str]]:
    """Every registered job accounted for, by name, and how many are not in yet: a summary that
    is not one (garbage, a folder, an unknown status or schema), or a run git has seen and that
    is gone (deleted), is a breach; registered jobs not run yet are said (the study is running or
    stopped part-way: incomplete, so nothing is confirmatory yet, but no breach); crashed runs
    (failed, timeout, interrupted) are listed, not hidden."""
    mine = {(r.arm, r.seed): r for r in runs if r.arm is not None}
    unreadable = sorted(r.folder for r in runs if r.unreadable)
    missing, crashed = [], []
    for stratum in study.strata:
        for arm in study.arms:
            key = study.arm_key(arm, stratum.task)
            for seed in stratum.seeds:
                run = mine.get((key, seed))
                if run is None:
                    missing.append(f"{key} seed {seed}")
                elif run.summary is None and not run.unreadable and not run.live:
                    missing.append(f"{run.folder} (no summary.json)")
                elif run.summary is not None and run.summary.status not in ANALYSED:
                    crashed.append(f"{run.folder} ({run.summary.status})")
    deleted = _deleted(folder)
    not_in = missing + crashed
    if unreadable:
        return Check("accounted", False, f"{len(unreadable)} run(s) whose summary.json is not a "
                     f"summary (edited or replaced): {_listed(unreadable)}"), not_in  # fmt: skip
    if deleted:
        return Check("accounted", False, f"{len(deleted)} run(s) git has seen are gone "
                     f"(deleted): {_listed(deleted)}"), not_in  # fmt: skip
    said = f"; not finished: {_listed(crashed)}" if crashed else ""
    if missing:
        return Check("accounted", True, f"incomplete: {len(missing)} registered run(s) not in "
                     f"yet ({_listed(missing)}){said}; no contrast is confirmatory until every "
                     "registered run is in"), not_in  # fmt: skip
    return Check("accounted", True, f"every one of the {study.n_jobs} registered jobs has its "
                 f"run{said}"), not_in  # fmt: skip


def _check_figures(folder: Path, runs: list[_Run], window: int | None = None) -> Check:
    """Every ended run's summary agrees with its own curves (:mod:`.figures`), and its final
    window holds the evaluations the record declares (``final_window``), where it declares it."""
    from experiments.protocols.study.figures import NO_CURVES, run_mismatches

    bad, unchecked, checked = [], [], 0
    for run in runs:
        if run.summary is None or run.summary.status == "running":
            continue  # a crashed run is checked too: its status must agree with its curves
        found = run_mismatches(folder / run.folder, run.summary)
        evals = (run.summary.stability or {}).get("final_evals")
        if window is not None and run.summary.status in ANALYSED and evals != window:
            found = [*found, f"its final window holds {evals} evaluations, not the declared "
                             f"{window}"]  # fmt: skip
        if found == [NO_CURVES]:
            unchecked.append(run.folder)
        elif found:
            bad.append(f"{run.folder}: {next(f for f in found if f != NO_CURVES)}")
        else:
            checked += 1
    if bad:
        return Check("figures", False, f"{len(bad)} run(s) whose summary disagrees with its own "
                     f"curves: {_listed(bad, 2)}")  # fmt: skip
    limit = f"; {len(unchecked)} without curves: not recomputed" if unchecked else ""
    return Check("figures", True, f"{checked} run(s)' status, divergence and evaluation figures "
                 f"recomputed from their own curves{limit}")  # fmt: skip


def _check_family(design: dict) -> Check:
    """What the record declares confirmatory, in one line; a family declared outside the record
    (a single-task record planned as one stratum of a pooled test, as Study 4's) is said, with
    its conservative reading, never passed in silence. Not a breach: the record is as
    registered."""
    family = design.get("family")
    if family is not None:
        parts = []
        for c in family.get("pooled", ()):
            margin = f", ±{c['margin']:g}" if c.get("margin") is not None else ""
            parts.append(f"{c['arm']} vs {design.get('baseline', 'none')} on {c['endpoint']} "
                         f"({c['test']}, alpha {c['alpha']}{margin})")  # fmt: skip
        tasks = len(design.get("tasks", ()))
        return Check("family", True, f"the record declares its confirmatory family: pooled over "
                     f"{tasks} tasks, {'; '.join(parts)}; per-task tests "
                     f"{family.get('per_task', 'exploratory')}")  # fmt: skip
    primary = design.get("primary", {})
    strata = (design.get("planning") or {}).get("strata")
    one = f"{primary.get('arm')} on {primary.get('endpoint')} ({primary.get('test')}, m = 1)"
    if strata and strata > 1:
        return Check("family", True, f"the record declares its task's contrast alone, {one}, "
                     f"and was planned as one of {strata} strata of a pooled test declared "
                     f"outside any record: read from the records, {strata + 1} tests and no "
                     f"correction across them (gradlab pool over the {strata} folders prints "
                     "the conservative reading, Holm over the strata)")  # fmt: skip
    return Check("family", True, f"one primary contrast, {one}")


def _check_anchor(folder: Path, digest: str, expected: str | None) -> Check:
    """The record against a hash published outside the folder (``--expect-sha256``); without
    one, whether anything outside the folder vouches for it (git history), said plainly."""
    if expected is not None:
        if expected.strip().lower() != digest:
            return Check(
                "anchor",
                False,
                f"the record hashes {digest}, not the published "
                f"{expected.strip().lower()}: it is not the record that was published",
            )
        return Check("anchor", True, f"the record hashes as published ({digest[:12]}...)")
    if _git(folder, "rev-parse", "--is-inside-work-tree") != "true":
        return Check("anchor", True, f"unanchored: outside git nothing outside this folder vouches "
                     f"for the record (sha256 {digest}); pass --expect-sha256 with the hash its "
                     "authors published")  # fmt: skip
    return Check("anchor", True, f"anchored by git history (sha256 {digest[:12]}...; "
                 "--expect-sha256 checks a published hash)")  # fmt: skip


def audit(folder: str | Path, *, config_dir: str | Path, expect_sha256: str | None = None) -> Audit:
    """Audits a study's folder (module docstring).

    Args:
      folder: the study's results folder (holding ``preregistration.json``).
      config_dir: the config folder the pinned files are compared with.
      expect_sha256: the record's SHA-256 as its authors published it (checked), or None.

    Raises:
      ConfigError: no record, or a record that is not JSON with a design.
    """
    folder = Path(folder)
    record, raw = _read_record(folder)
    checked, study = _check_record(record)
    if study is None:  # the record's own design, as stored, to count against
        study = _study_from_design(record["design"])
    runs = _runs(folder, study)
    timing, first = _check_timing(runs, parse_utc(record.get("registered_at")))
    accounted, not_in_names = _check_accounted(study, runs, folder)
    checks = (
        checked,
        _check_anchor(folder, file_sha256(raw), expect_sha256),
        _check_record_hash(runs, file_sha256(raw)),
        timing,
        _check_git(folder, first),
        _check_configs(folder, record, runs),
        _check_code(record, runs),
        *_check_plugins(record, runs),
        _check_job_set(study, runs),
        _check_identity(record, runs),
        accounted,
        _check_figures(folder, runs, record["design"].get("final_window")),
        _check_current(record, Path(config_dir)),
        _check_family(record["design"]),
    )
    return Audit(folder, str(record["design"]["name"]), _flow(study, runs), checks,
                 len(not_in_names), tuple(not_in_names))  # fmt: skip


def _study_from_design(design: dict):
    from experiments.protocols.study.design import Arm, Planning, Study, TaskStratum
    from experiments.protocols.study.record import design_seeds

    try:
        seeds = design_seeds(design)
        tasks = tuple(TaskStratum(t, s) for t, s in seeds.items()) if "tasks" in design else ()
        task, only = ("", range(0)) if tasks else next(iter(seeds.items()))
        return Study(
            name=str(design["name"]), ablation=str(design.get("ablation", "")), tasks=tasks,
            task=task, regime=str(design["regime"]), seeds=only,
            calibration_seeds=range(0), baseline=str(design.get("baseline", "none")),
            arms=tuple(Arm(str(a["variant"]), tuple(a.get("overrides", ())))
                       for a in design["arms"]),
            primary=None, planning=Planning(), exploratory_endpoints=(), diverged_return="",
            overrides=tuple(design.get("overrides", ())),
        )  # fmt: skip
    except (KeyError, TypeError, ValueError, IndexError, StopIteration):
        raise ConfigError("corrupt pre-registration record: its design cannot be read") from None
