"""`gradlab explain`: what each gradient variant and placement does, measured live."""

from __future__ import annotations

import dataclasses
import json

import typer

from cli._errors import guarded
from cli._live import FORMATS, format_option, start

__all__ = ["FORMATS", "explain"]

FormatOption = format_option("terminal table")


@guarded
def explain(
    fmt: FormatOption = "rich",
) -> None:
    """Measure every variant and placement live on a small graph and say what each one does.

    Every figure is computed now with tf.GradientTape, a real Keras optimizer and Keras' own
    MaxNorm: forward change (max |T(h) - h|), the factor applied to the gradient through the
    hidden state, the scope (elementwise, per sample, per variable, global), and, for the three
    placements of scale_gradient(0.5) on a 3-step linear unroll h_k = w h_(k-1) (w = 2, h_0 = 1),
    the gradient each step's loss sends to h_0 and to the dynamics weight w; and which weights
    one SGD step moves under stop_gradient on the hidden state vs muzero.freeze of a network.

    Examples:

      gradlab explain

      gradlab explain --format json > explain.json
    """
    start(fmt)
    from experiments.gradients import (  # deferred: TensorFlow's start-up cost
        confusions,
        explain_freeze,
        explain_placements,
        explain_variants,
        placement_notes,
    )

    variants = explain_variants()
    placements = explain_placements()
    freeze = explain_freeze()
    confused = confusions(variants)
    notes = placement_notes(placements)
    if fmt == "json":
        payload = {
            "variants": [dataclasses.asdict(v) for v in variants],
            "placements": [dataclasses.asdict(p) for p in placements],
            "freeze": [dataclasses.asdict(f) for f in freeze],
            "confusions": confused,
            "placement_notes": notes,
        }
        typer.echo(json.dumps(payload, indent=2))
    elif fmt == "md":
        typer.echo(_markdown(variants, placements, freeze, confused, notes))
    else:
        _rich(variants, placements, freeze, confused, notes)


def _name(row) -> str:
    """A variant's name, with the distribution and version of a plug-in's."""
    return row.name if row.plugin is None else f"{row.name} (plug-in {row.plugin})"


def _params(params: dict[str, float]) -> str:
    return ", ".join(f"{k}={v:g}" for k, v in params.items()) or "-"


def _steps(values: list[float]) -> str:
    return "  ".join(f"{v:g}" for v in values)


_FREEZE_TITLE = (
    "Stopping a gradient vs not applying it: one SGD step on h_0 = r o, h_k = w h_(k-1) "
    "(2 steps), heads y_k = p h_k, loss sum y_k^2 (o=1, r=1, w=0.5, p=2)"
)


def _moved(row) -> str:
    return ", ".join(f"{n[:4]}{' moved' if m else ' FIXED'}" for n, m in row.moved.items())


def _grads(row) -> str:
    return "  ".join(f"{g:g}" for g in row.gradients.values())


def _markdown(variants, placements, freeze, confusions, notes) -> str:
    lines = [
        "## Variants (measured live)",
        "",
        "| variant | acts on | params | forward max abs diff | gradient factor through h "
        "| scope | evidence | what it is |",
        "|---|---|---|---:|---:|---|---|---|",
    ]
    for v in variants:
        lines.append(
            f"| {_name(v)} | {v.acts_on} | {_params(v.params)} | {v.forward_max_abs_diff:.4g} "
            f"| {v.gradient_factor:.4g} | {v.scope} | {v.evidence} | {v.summary} |"
        )
    lines += [
        "",
        "## Placements of scale_gradient(0.5) on a 3-step unroll h_k = w h_(k-1), w=2, h_0=1",
        "",
        "| placement | abs dL_k/dh_0, k=0..3 | dL_k/dw, k=0..3 | where it acts |",
        "|---|---|---|---|",
    ]
    for p in placements:
        lines.append(f"| {p.name} | {_steps(p.grad_h0)} | {_steps(p.grad_w)} | {p.summary} |")
    lines += [
        "",
        f"## {_FREEZE_TITLE}",
        "",
        "| case | dL/dr, dL/dw, dL/dp | after one step | what happens |",
        "|---|---|---|---|",
    ]
    for f in freeze:
        lines.append(f"| {f.case} | {_grads(f)} | {_moved(f)} | {f.what} |")
    lines += ["", "## What this settles", ""]
    lines += [f"- {c}" for c in confusions + notes]
    return "\n".join(lines)


def _rich(variants, placements, freeze, confusions, notes) -> None:
    from rich.console import Console  # deferred: rich's console and table (~60 ms)
    from rich.table import Table  # deferred: rich's console and table (~60 ms)

    console = Console()
    table = Table(title="Hidden-state variants, measured live", show_lines=False)
    for col, kw in [
        ("variant", {"style": "bold"}),
        ("acts on", {}),
        ("params", {}),
        ("fwd max|Δ|", {"justify": "right"}),
        ("grad factor", {"justify": "right"}),
        ("scope", {}),
        ("evidence", {"overflow": "fold"}),
        ("what it is", {"overflow": "fold"}),
    ]:
        table.add_column(col, **kw)
    for v in variants:
        table.add_row(
            _name(v),
            v.acts_on,
            _params(v.params),
            f"{v.forward_max_abs_diff:.3g}",
            f"{v.gradient_factor:.3g}",
            v.scope,
            v.evidence,
            v.summary,
        )
    console.print(table)
    ptable = Table(
        title="Placements of scale_gradient(0.5), 3-step unroll h_k = w·h_(k-1) (w=2, h_0=1)"
    )
    ptable.add_column("placement", style="bold")
    ptable.add_column("|dL_k/dh_0|, k=0..3", justify="right")
    ptable.add_column("dL_k/dw, k=0..3", justify="right")
    ptable.add_column("where it acts", overflow="fold")
    for p in placements:
        ptable.add_row(p.name, _steps(p.grad_h0), _steps(p.grad_w), p.summary)
    console.print(ptable)
    ftable = Table(title=_FREEZE_TITLE)
    ftable.add_column("case", style="bold")
    ftable.add_column("dL/dr, dL/dw, dL/dp", justify="right")
    ftable.add_column("after one step")
    ftable.add_column("what happens", overflow="fold")
    for f in freeze:
        ftable.add_row(f.case, _grads(f), _moved(f), f.what)
    console.print(ftable)
    console.print("[bold]What this settles[/bold]")
    for line in confusions + notes:
        console.print(f" • {line}")
