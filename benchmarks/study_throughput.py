"""Runs per hour of a study's sweeps, end to end: this tree against a baseline commit, alternating.

    python benchmarks/study_throughput.py --baseline-ref COMMIT --rounds 3      # idle machine only
    python benchmarks/study_throughput.py --sweep catch --rounds 1              # this tree alone

Each arm runs ``gradlab sweep`` as a study does: a subprocess ``python -c "from cli.main import
app; app()" sweep ...`` with ``PYTHONPATH`` and the working folder at its tree (the baseline's a
temporary ``git worktree`` of ``--baseline-ref``, removed at the end; the current one this tree,
uncommitted edits included), into a temporary results folder, so its time holds the CLI's
start-up, planning, the launcher's workers, compilation, self-play, training, evaluation, the W&B
offline runs and the summaries. The sweeps (:data:`SWEEPS`; ``--override`` appends to both
arms, ``--current-override`` to this tree's only: a lever the baseline does not have):

* ``catch``: ``ablation=study3_tuned task=catch seed=0,1,2,3,4``: Study 3's tuned arms (``none``,
  ``scale_gradient``, ``maxnorm``, ``stop_gradient``) x 5 seeds, 20 runs;
* ``breakout``: ``ablation=learning task=breakout regime=tuned variant=none seed=0,1,2,3``: one
  arm x 4 seeds of MinAtar Breakout's preset (160,000 frames a run), 4 runs.

Both with ``logger=wandb_offline`` (a real sweep's default) and ``--jobs auto`` (one job per core,
one TensorFlow thread each). Every sweep gets an XLA cache of its own (``runtime.xla_cache``; the
user's ``~/.cache/gradlab/xla`` is never touched): empty (``--xla-cache fresh``, the default: a
sweep of shapes never compiled on the machine) or kept per arm and sweep across rounds and filled
first by one untimed sweep of that arm (``--xla-cache warm``).

Per round each sweep runs in both arms, the order flipping every round (baseline, current, then
current, baseline, ...). Printed: each sweep's runs per hour, its phases (below) with the jobs'
first steps as a share of their job-seconds (:func:`startup_share`), each arm's median over the
rounds, and current / baseline per round with its range; ``--out`` gets every
timing as JSON. The script refuses to start (one line, exit 2) on a busy machine (1-minute load
above ``--max-load``, or another gradlab, pytest or benchmark process): ``--force`` overrides.

The phases come from what runs record, no instrumentation added (the harness's own clock gives a
sweep's start and end): per job, ``summary.json``'s ``started_at``, ``ended_at``, ``wall_time_s``
and ``pid``, and ``metrics.jsonl``'s ``time/elapsed_s`` (the training loop's clock), ``env/steps``
and ``eval/return``; per sweep, ``multirun.yaml``'s modification time. See :class:`JobPhases`
and :class:`SweepPhases`; docs/performance.md says what cannot be split and why.
"""

from __future__ import annotations

import argparse
import dataclasses
import datetime as dt
import json
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterable, Sequence
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
SWEEPS = {
    "catch": ("ablation=study3_tuned", "task=catch", "seed=0,1,2,3,4"),
    "breakout": (
        "ablation=learning",
        "task=breakout",
        "regime=tuned",
        "variant=none",
        "seed=0,1,2,3",
    ),
}
RESERVED = ("ablation", "runtime.results_dir", "runtime.xla_cache", "hydra")
"""Override keys the harness sets itself (where results and programs go, the sweep's shape)."""
BUSY_WORDS = ("gradlab", "cli.main", "experiments.jobs", "pytest", "benchmarks/")
"""A process whose command line holds one of these is work beside which nothing can be timed."""
_CLI = "from cli.main import app; app()"


class UsageError(Exception):
    """Bad input or a busy machine: one line on stderr, exit 2."""


class SweepFailed(Exception):
    """A sweep exited with an error: its command and its log's last lines, exit 1."""


# ------------------------------------------------------------------------------------------
# The phases, from the runs' records


@dataclasses.dataclass(frozen=True)
class Row:
    """What the split reads of one ``metrics.jsonl`` row."""

    elapsed_s: float  # time/elapsed_s: seconds since the training loop started
    env_steps: float  # env/steps: a row with more than the row before made a self-play move
    evaluated: bool  # the row holds eval/return


@dataclasses.dataclass(frozen=True)
class JobRecord:
    """One job's records: its ``summary.json`` fields (times as Unix seconds) and its rows."""

    name: str
    status: str
    pid: int | None
    started: float
    ended: float | None
    wall_time_s: float | None
    rows: tuple[Row, ...]
    warnings: tuple[str, ...] = ()  # summary.json's (e.g. the W&B run could not be opened)


@dataclasses.dataclass(frozen=True)
class JobPhases:
    """One job's time, by phase (seconds; ``None`` where its records do not tell).

    ``setup_s``: ``summary.json`` first written to the job's clock starting (the W&B run opened),
    ``(ended_at - started_at) - wall_time_s``. ``first_step_s``: the training loop's start to its
    first row (environments, networks built or restarted from the host's kept agent, tracing and
    compilation, warm-up self-play, the first update): the first ``time/elapsed_s``. ``steps_s``:
    first row to last, split by the intervals between rows: a row that made a self-play move
    (``env/steps`` grew) or evaluated costs an update plus that work, so ``selfplay_s`` and
    ``eval_s`` are those rows' time less one median plain interval each, and ``train_s`` the rest
    (the updates, their batches and the writing of every row, metrics.jsonl and W&B); a row that
    did both counts as an evaluation. With work beside the step (``--jobs 1``) the split blurs.
    ``tail_s``: last row to the job's clock stopping (``wall_time_s - last elapsed``).
    """

    name: str
    status: str
    pid: int | None
    steps: int
    started_s: float  # since the sweep's start
    ended_s: float | None
    setup_s: float | None
    first_step_s: float | None
    steps_s: float | None
    train_s: float | None
    selfplay_s: float | None
    eval_s: float | None
    tail_s: float | None
    warnings: tuple[str, ...] = ()


@dataclasses.dataclass(frozen=True)
class SweepPhases:
    """A sweep's wall time, by phase (seconds).

    ``planning_s``: the command's start to ``multirun.yaml`` (the CLI's import, the plan; None
    without the file). ``startup_s``: the command's start to the first job's ``started_at``
    (planning, the launcher, its workers' start and TensorFlow import). ``between_s``: in each job
    process (``pid``), a job's ``ended_at`` to its next job's ``started_at``, summed (the job's
    summary, curves and W&B close, then the next job's launch). ``teardown_s``: the last
    ``ended_at`` to the command's end (the last job's close, the launcher's shutdown). ``jobs``:
    job-seconds of each :class:`JobPhases` field, summed over the jobs.
    """

    wall_s: float
    planning_s: float | None
    startup_s: float
    between_s: float
    teardown_s: float
    jobs: dict[str, float]


def split_rows(rows: Sequence[Row]) -> tuple[float, float, float] | None:
    """``(train_s, selfplay_s, eval_s)`` of the rows' intervals (see :class:`JobPhases`); None
    with fewer than two rows or no plain interval to take the median of."""
    plain, selfplay, evaluated = [], [], []
    for before, row in zip(rows, rows[1:], strict=False):
        gap = row.elapsed_s - before.elapsed_s
        if row.evaluated:
            evaluated.append(gap)
        elif row.env_steps > before.env_steps:
            selfplay.append(gap)
        else:
            plain.append(gap)
    if not plain:
        return None
    step = statistics.median(plain)
    selfplay_s = sum(selfplay) - step * len(selfplay)
    eval_s = sum(evaluated) - step * len(evaluated)
    return sum(plain) + step * (len(selfplay) + len(evaluated)), selfplay_s, eval_s


def job_phases(job: JobRecord, sweep_start: float) -> JobPhases:
    """A job's :class:`JobPhases` from its records; ``sweep_start`` in Unix seconds."""
    rows = job.rows
    first = rows[0].elapsed_s if rows else None
    steps_s = rows[-1].elapsed_s - rows[0].elapsed_s if rows else None
    split = split_rows(rows)
    known = job.ended is not None and job.wall_time_s is not None
    return JobPhases(
        name=job.name,
        status=job.status,
        pid=job.pid,
        steps=len(rows),
        started_s=job.started - sweep_start,
        ended_s=None if job.ended is None else job.ended - sweep_start,
        setup_s=(job.ended - job.started) - job.wall_time_s if known else None,
        first_step_s=first,
        steps_s=steps_s,
        train_s=split[0] if split else None,
        selfplay_s=split[1] if split else None,
        eval_s=split[2] if split else None,
        tail_s=None
        if not rows or job.wall_time_s is None
        else job.wall_time_s - rows[-1].elapsed_s,
        warnings=job.warnings,
    )


def sweep_phases(
    jobs: Sequence[JobPhases], *, wall_s: float, planned_s: float | None
) -> SweepPhases:
    """A sweep's :class:`SweepPhases` from its jobs' phases (times since the sweep's start),
    its wall time and when ``multirun.yaml`` was written (since the start; None: not written)."""
    between = 0.0
    for pid in {j.pid for j in jobs}:
        mine = sorted((j for j in jobs if j.pid == pid), key=lambda j: j.started_s)
        for before, after in zip(mine, mine[1:], strict=False):
            if before.ended_s is not None:
                between += after.started_s - before.ended_s
    ends = [j.ended_s for j in jobs if j.ended_s is not None]
    fields = ("setup_s", "first_step_s", "steps_s", "train_s", "selfplay_s", "eval_s", "tail_s")
    totals = {f: sum(getattr(j, f) or 0.0 for j in jobs) for f in fields}
    return SweepPhases(
        wall_s=wall_s,
        planning_s=planned_s,
        startup_s=min(j.started_s for j in jobs),
        between_s=between,
        teardown_s=wall_s - max(ends) if ends else wall_s,
        jobs=totals,
    )


def runs_per_hour(runs: int, wall_s: float) -> float:
    """Runs a sweep finishes per hour of wall time."""
    return runs * 3600.0 / wall_s


@dataclasses.dataclass(frozen=True)
class Comparison:
    """Current against baseline for one sweep: runs/h by round, medians, per-round ratios."""

    baseline: list[float]
    current: list[float]
    baseline_median: float
    current_median: float
    ratios: list[float]  # current / baseline, round by round
    ratio_of_medians: float
    ratio_range: tuple[float, float]


def compare(baseline: Sequence[float], current: Sequence[float]) -> Comparison:
    """:class:`Comparison` of two arms' runs/h, paired by round."""
    if len(baseline) != len(current) or not baseline:
        raise ValueError("compare needs the same number (>= 1) of rounds in both arms")
    ratios = [c / b for b, c in zip(baseline, current, strict=True)]
    b, c = statistics.median(baseline), statistics.median(current)
    return Comparison(
        list(baseline), list(current), b, c, ratios, c / b, (min(ratios), max(ratios))
    )


# ------------------------------------------------------------------------------------------
# Reading a sweep's folder


def _utc(text: str | None) -> float | None:
    if not isinstance(text, str):
        return None
    return dt.datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp()


def read_job(folder: Path) -> JobRecord:
    """One job folder's :class:`JobRecord` (``summary.json`` and ``metrics.jsonl``)."""
    summary = json.loads((folder / "summary.json").read_text(encoding="utf-8"))
    rows = []
    metrics = folder / "metrics.jsonl"
    lines = metrics.read_text(encoding="utf-8").splitlines() if metrics.is_file() else []
    for line in lines:
        row = json.loads(line)
        rows.append(Row(row["time/elapsed_s"], row.get("env/steps", 0.0), "eval/return" in row))
    started = _utc(summary.get("started_at"))
    if started is None:
        raise UsageError(f"{folder}/summary.json has no started_at (a gradlab before schema 3)")
    return JobRecord(
        name=folder.name,
        status=summary["status"],
        pid=summary.get("pid"),
        started=started,
        ended=_utc(summary.get("ended_at")),
        wall_time_s=summary.get("wall_time_s"),
        rows=tuple(rows),
        warnings=tuple(summary.get("warnings") or ()),
    )


# ------------------------------------------------------------------------------------------
# The machine, the trees, the sweeps


def busy_reasons(
    load: float, commands: Iterable[tuple[int, str]], *, own: set[int], max_load: float
) -> list[str]:
    """Why the machine is busy: a 1-minute load above ``max_load``, and each process (pid,
    command line) not in ``own`` whose command line holds one of :data:`BUSY_WORDS`."""
    reasons = [f"1-minute load {load:.2f} > {max_load:g}"] if load > max_load else []
    for pid, command in commands:
        if pid not in own and any(word in command for word in BUSY_WORDS):
            reasons.append(f"process {pid} ({command[:80]})")
    return reasons


def machine_busy(max_load: float) -> list[str]:
    """:func:`busy_reasons` of this machine now, as psutil sees it (this process, its parents
    and its children are its own)."""
    import psutil

    me = psutil.Process()
    own = {me.pid} | {p.pid for p in me.parents()} | {p.pid for p in me.children(recursive=True)}
    commands = []
    for proc in psutil.process_iter(["pid", "cmdline"]):
        commands.append((proc.info["pid"], " ".join(proc.info["cmdline"] or ())))
    return busy_reasons(psutil.getloadavg()[0], commands, own=own, max_load=max_load)


def _git(*args: str) -> str:
    out = subprocess.run(["git", "-C", str(HERE), *args], capture_output=True, text=True)
    if out.returncode != 0:
        raise UsageError(f"git {' '.join(args)}: {out.stderr.strip().splitlines()[-1:]}")
    return out.stdout.strip()


@dataclasses.dataclass(frozen=True)
class SweepRun:
    """One timed sweep: what ran, its wall and CPU time, its phases and its jobs'."""

    sweep: str
    arm: str
    round: int
    overrides: list[str]
    runs: int
    statuses: dict[str, int]
    wall_s: float
    runs_per_hour: float
    phases: SweepPhases
    jobs: list[JobPhases]


def run_sweep(
    tree: Path, overrides: list[str], *, cache: Path, jobs: str, log: Path, label: tuple
) -> SweepRun:
    """Runs ``gradlab sweep`` of ``tree`` into a temporary folder and reads its records;
    ``label``: (sweep, arm, round). A sweep that fails (exit code not 0) stops the benchmark."""
    results = Path(tempfile.mkdtemp(prefix="gradlab-throughput-"))
    full = [*overrides, f"runtime.results_dir={results}", f"runtime.xla_cache={cache}"]
    env = dict(os.environ, PYTHONPATH=str(tree), TF_CPP_MIN_LOG_LEVEL="3")
    start = time.time()
    with log.open("w", encoding="utf-8") as out:
        command = [sys.executable, "-c", _CLI, "sweep", "--jobs", jobs, *full]
        code = subprocess.run(command, cwd=tree, env=env, stdout=out, stderr=subprocess.STDOUT)
    wall = time.time() - start
    try:
        if code.returncode != 0:
            tail = "\n".join(log.read_text(encoding="utf-8").splitlines()[-20:])
            raise SweepFailed(
                f"gradlab sweep {' '.join(full)} in {tree} exited {code.returncode}:\n{tail}"
            )
        (folder,) = [p for p in results.iterdir() if p.is_dir()]
        records = [read_job(p) for p in sorted(folder.iterdir()) if (p / "summary.json").is_file()]
        multirun = folder / "multirun.yaml"
        planned = multirun.stat().st_mtime - start if multirun.is_file() else None
    finally:
        shutil.rmtree(results, ignore_errors=True)
    phases = [job_phases(r, start) for r in records]
    statuses: dict[str, int] = {}
    for r in records:
        statuses[r.status] = statuses.get(r.status, 0) + 1
    sweep, arm, round_ = label
    return SweepRun(
        sweep=sweep,
        arm=arm,
        round=round_,
        overrides=full,
        runs=len(records),
        statuses=statuses,
        wall_s=wall,
        runs_per_hour=runs_per_hour(len(records), wall),
        phases=sweep_phases(phases, wall_s=wall, planned_s=planned),
        jobs=phases,
    )


def startup_share(jobs: dict[str, float]) -> float | None:
    """The jobs' first steps (tracing, compiling or loading; issue 52's start-up) as a fraction of
    all their job-seconds (setup, first step, steps, tail); None where they sum to nothing."""
    total = sum(jobs.get(k, 0.0) for k in ("setup_s", "first_step_s", "steps_s", "tail_s"))
    return jobs.get("first_step_s", 0.0) / total if total > 0 else None


def describe(run: SweepRun) -> str:
    """One line of a sweep's figures."""
    p, j = run.phases, run.phases.jobs
    job_part = ", ".join(f"{k[:-2]} {v:.1f}" for k, v in j.items() if k != "steps_s")
    share = startup_share(j)
    if share is not None:
        job_part += f" (first steps {100 * share:.1f}% of the job-seconds)"
    statuses = ", ".join(f"{n} {k}" for k, n in run.statuses.items())
    warned = sum(1 for job in run.jobs if job.warnings)
    return (
        f"round {run.round} {run.sweep:8s} {run.arm:8s}: {run.runs} runs ({statuses}) in "
        f"{run.wall_s:.1f} s = {run.runs_per_hour:.1f} runs/h; start-up {p.startup_s:.1f} s "
        f"(planning {p.planning_s or 0:.1f}), between jobs {p.between_s:.1f}, teardown "
        f"{p.teardown_s:.1f}; job-seconds: {job_part}"
        + (f"; {warned} jobs with warnings (see the JSON)" if warned else "")
    )


# ------------------------------------------------------------------------------------------
# The command


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # one line, exit 2, as gradlab's commands
        raise UsageError(message)


def parse_args(argv: Sequence[str] | None) -> argparse.Namespace:
    """The command line, checked (:class:`UsageError` names the bad value and the choices)."""
    parser = _Parser(description=__doc__.splitlines()[0])
    parser.add_argument("--baseline-ref", help="a git commit to run beside this tree")
    parser.add_argument("--rounds", type=int, default=3, help="sweeps per arm (default 3)")
    parser.add_argument("--sweep", choices=("catch", "breakout", "both"), default="both")
    parser.add_argument("--jobs", default="auto", help="gradlab sweep --jobs (default auto)")
    parser.add_argument(
        "--override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Hydra override appended to every sweep (repeatable)",
    )
    parser.add_argument(
        "--current-override",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="a Hydra override appended to this tree's sweeps only: a lever the baseline does not "
        "have (repeatable)",
    )
    parser.add_argument("--xla-cache", choices=("fresh", "warm"), default="fresh")
    parser.add_argument("--max-load", type=float, default=0.5, help="busy above this load")
    parser.add_argument("--force", action="store_true", help="run on a busy machine anyway")
    parser.add_argument("--out", type=Path, default=Path("study_throughput.json"))
    args = parser.parse_args(argv)
    if args.rounds < 1:
        raise UsageError(f"--rounds {args.rounds} is out of range; expected an integer >= 1")
    if args.jobs != "auto" and not (args.jobs.isdigit() and int(args.jobs) >= 1):
        raise UsageError(f"--jobs {args.jobs!r} is not valid; expected auto or an integer >= 1")
    given = (("--override", args.override), ("--current-override", args.current_override))
    for flag, items in given:
        for item in items:
            key = item.split("=", 1)[0]
            if "=" not in item or not key:
                raise UsageError(f"{flag} {item!r} is not KEY=VALUE")
            if any(key == r or key.startswith((f"{r}.", f"{r}/")) for r in RESERVED):
                raise UsageError(
                    f"{flag} {item!r}: the harness sets {key}; keys it sets: " + ", ".join(RESERVED)
                )
    return args


def main(argv: Sequence[str] | None = None) -> int:
    """Runs the benchmark; returns the exit code (2: bad input or a busy machine)."""
    try:
        args = parse_args(argv)
        if not args.force and (reasons := machine_busy(args.max_load)):
            raise UsageError(f"machine busy ({'; '.join(reasons[:3])}); --force to time anyway")
        baseline = (
            _git("rev-parse", "--verify", f"{args.baseline_ref}^{{commit}}")
            if (args.baseline_ref)
            else None
        )
        current = _git("rev-parse", "HEAD")
        dirty = bool(_git("status", "--porcelain", "--untracked-files=no"))
        return _run(
            args, baseline, current, dirty, argv=list(sys.argv[1:] if argv is None else argv)
        )
    except UsageError as err:
        print(f"error: {err}", file=sys.stderr)
        return 2
    except SweepFailed as err:
        print(f"error: {err}", file=sys.stderr)
        return 1


def _run(
    args: argparse.Namespace, baseline: str | None, current: str, dirty: bool, *, argv: list[str]
) -> int:
    names = ["catch", "breakout"] if args.sweep == "both" else [args.sweep]
    work = Path(tempfile.mkdtemp(prefix="gradlab-study-throughput-"))
    arms = {"current": HERE}
    try:
        if baseline:
            _git("worktree", "add", "--detach", str(work / "baseline"), baseline)
            arms = {"baseline": work / "baseline", "current": HERE}
        common = {n: [*SWEEPS[n], "logger=wandb_offline", *args.override] for n in names}
        overrides = {
            (n, a): [*common[n], *(args.current_override if a == "current" else [])]
            for n in names
            for a in arms
        }
        caches = {(n, a): work / "xla" / f"{n}-{a}" for n in names for a in arms}
        if args.xla_cache == "warm":
            for (name, arm), cache in caches.items():
                log = work / f"warm-{name}-{arm}.log"
                run_sweep(
                    arms[arm],
                    overrides[name, arm],
                    cache=cache,
                    jobs=args.jobs,
                    log=log,
                    label=(name, arm, 0),
                )
        runs: list[SweepRun] = []
        for r in range(1, args.rounds + 1):
            order = list(arms) if r % 2 else list(reversed(arms))
            for name in names:
                for arm in order:
                    cache = caches[name, arm]
                    if args.xla_cache == "fresh":
                        shutil.rmtree(cache, ignore_errors=True)
                    log = work / f"{name}-{arm}-{r}.log"
                    run = run_sweep(
                        arms[arm],
                        overrides[name, arm],
                        cache=cache,
                        jobs=args.jobs,
                        log=log,
                        label=(name, arm, r),
                    )
                    runs.append(run)
                    print(describe(run), flush=True)
    finally:
        if baseline:
            subprocess.run(
                ["git", "-C", str(HERE), "worktree", "remove", "--force", str(work / "baseline")],
                capture_output=True,
            )
        shutil.rmtree(work, ignore_errors=True)
    comparisons = {}
    for name in names:
        by_arm = {a: [x.runs_per_hour for x in runs if (x.sweep, x.arm) == (name, a)] for a in arms}
        each = ", ".join(f"{a} median {statistics.median(v):.1f} runs/h" for a, v in by_arm.items())
        print(f"{name}: {each}")
        if baseline:
            c = compare(by_arm["baseline"], by_arm["current"])
            comparisons[name] = c
            print(
                f"{name}: current / baseline {c.ratio_of_medians:.2f}x (by round "
                + ", ".join(f"{x:.2f}" for x in c.ratios)
                + f"; range {c.ratio_range[0]:.2f}-{c.ratio_range[1]:.2f})"
            )
    record = {
        "argv": argv,
        "arguments": {k: str(v) if isinstance(v, Path) else v for k, v in vars(args).items()},
        "baseline_commit": baseline,
        "current_commit": current,
        "current_dirty": dirty,
        "cores": os.cpu_count(),
        "runs": [dataclasses.asdict(x) for x in runs],
        "comparisons": {n: dataclasses.asdict(c) for n, c in comparisons.items()},
    }
    args.out.write_text(json.dumps(record, indent=1) + "\n", encoding="utf-8")
    print(f"every timing: {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
