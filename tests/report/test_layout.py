"""Small multiples (experiments/report/figures/layout.py): which key makes the lines and which
the panels, on hand-built runs; the panels' titles and the lines' legend order; the grid."""

from __future__ import annotations

import pandas as pd

from experiments.gradients import VARIANTS
from experiments.report.figures.layout import layout_of, panel_grid


def _runs(rows: list[dict]) -> pd.DataFrame:
    runs = pd.DataFrame(rows)
    runs["group"] = [", ".join(f"{k}={v}" for k, v in row.items() if k != "seed") for row in rows]
    return runs


VARIANT_BY_REGIME = _runs([
    {"regime": "stress", "variant": "scale_gradient", "lr": 0.1, "seed": 0},
    {"regime": "stress", "variant": "none", "lr": 0.1, "seed": 0},
    {"regime": "tuned", "variant": "none", "lr": 0.1, "seed": 1},
])  # fmt: skip


def test_the_variant_makes_the_lines_and_the_other_varying_keys_the_panels():
    layout = layout_of(VARIANT_BY_REGIME, ["regime", "variant", "lr"])  # lr is held: no role
    assert (layout.line_key, layout.panel_keys) == ("variant", ("regime",))
    registered = list(VARIANTS)
    assert registered.index("none") < registered.index("scale_gradient")
    assert layout.values == ("none", "scale_gradient")  # the registry's order, not the runs'
    assert set(layout.styles) == {"none", "scale_gradient"}
    assert layout.styles["none"] != layout.styles["scale_gradient"]


def test_panels_in_the_runs_order_and_lines_in_legend_order():
    layout = layout_of(VARIANT_BY_REGIME, ["regime", "variant", "lr"])
    panels = list(layout.panels(VARIANT_BY_REGIME))
    assert [title for title, _ in panels] == ["regime=stress", "regime=tuned"]
    stress, tuned = panels[0][1], panels[1][1]
    assert [value for value, _ in layout.lines(stress)] == ["none", "scale_gradient"]
    assert [value for value, _ in layout.lines(tuned)] == ["none"]  # no empty line drawn
    (_, members), *_ = layout.lines(tuned)
    assert members["seed"].tolist() == [1]


def test_one_varying_key_other_than_the_variant_makes_the_lines_in_one_panel():
    runs = _runs([{"variant": "none", "lr": lr, "seed": 0} for lr in (0.1, 0.01)])
    layout = layout_of(runs, ["variant", "lr"])
    assert (layout.line_key, layout.panel_keys) == ("lr", ())
    assert [title for title, _ in layout.panels(runs)] == [""]
    assert set(layout.values) == {"0.1", "0.01"}


def test_several_keys_without_the_variant_make_one_line_per_group():
    runs = _runs([
        {"variant": "none", "lr": 0.1, "batch": 8, "seed": 0},
        {"variant": "none", "lr": 0.01, "batch": 16, "seed": 0},
    ])  # fmt: skip
    layout = layout_of(runs, ["variant", "lr", "batch"])
    assert (layout.line_key, layout.panel_keys) == ("group", ())
    assert layout.values == ("variant=none, lr=0.1, batch=8", "variant=none, lr=0.01, batch=16")


def test_the_grid_has_two_columns_at_most_and_hides_unused_cells():
    fig, axes = panel_grid(3)
    assert len(axes) == 3 and len(fig.axes) == 4  # 2 x 2, the fourth hidden
    assert [ax.get_visible() for ax in fig.axes] == [True, True, True, False]
    fig, axes = panel_grid(1)
    assert len(axes) == 1 and len(fig.axes) == 1
    fig, axes = panel_grid(0)  # nothing to draw: still one panel
    assert len(axes) == 1
