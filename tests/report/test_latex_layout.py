"""Where a LaTeX table breaks (experiments/report/table/latex_layout.py), in estimated points,
without a LaTeX engine: metric blocks within the text width, rows by stratum then by row within a
page, blocks packed into floats; every cell in exactly one block, never cut. The width estimate is
checked against pdflatex's own where one is installed."""

from __future__ import annotations

import itertools
import random
import re

import pytest
from _latex import compile_table, engine

from experiments.report.table import latex_layout as layout
from experiments.report.table.latex_layout import (
    GAP,
    HEAD,
    LINE,
    ROW,
    block_height,
    metric_groups,
    plan,
    row_chunks,
)
from experiments.report.table.markup import latex_text


def test_block_height_by_hand():
    assert block_height([3, 5]) == HEAD + 8 * LINE + 2 * ROW  # 34 + 76 + 1 = 111
    assert block_height([3, 5]) == pytest.approx(111.0)


def test_metric_groups_at_most_three_and_within_the_width():
    assert metric_groups(100, [80] * 4, width=345) == [(0, 1, 2), (3,)]  # 100 + 3 x 80 = 340
    assert metric_groups(100, [90] * 4, width=345) == [(0, 1), (2, 3)]  # 100 + 3 x 90 = 370
    assert metric_groups(100, [150, 150, 150], width=345) == [(0,), (1,), (2,)]
    # the tail (excluded runs) rides with the last metric: 100 + 80 + 80 + 100 = 360 > 345
    assert metric_groups(100, [80, 80], 100, width=345) == [(0,), (1,)]
    assert metric_groups(100, [80, 80], 40, width=345) == [(0, 1)]
    # wider than the page even alone: one a block, never dropped
    assert metric_groups(400, [10, 10], width=345) == [(0,), (1,)]


def test_row_chunks_whole_strata_then_rows():
    lines, strata = [5] * 10, [0] * 5 + [1] * 5  # a row 48pt; one stratum 34 + 5 x 48 = 274
    assert row_chunks(lines, strata, room=600) == [tuple(range(10))]  # 514: fits whole
    assert row_chunks(lines, strata, room=300) == [(0, 1, 2, 3, 4), (5, 6, 7, 8, 9)]
    # a stratum taller than the room: its rows, 2 a chunk (34 + 2 x 48 = 130 <= 150 < 178)
    assert row_chunks(lines, strata, room=150) == [(0, 1), (2, 3), (4,), (5, 6), (7, 8), (9,)]


def test_row_chunks_join_small_strata():
    lines, strata = [1] * 6, [0, 0, 1, 1, 2, 2]  # a stratum 34 + 2 x 10 = 54; two: 74
    assert row_chunks(lines, strata, room=80) == [(0, 1, 2, 3), (4, 5)]
    assert row_chunks(lines, strata, room=94) == [(0, 1, 2, 3, 4, 5)]  # 34 + 6 x 10 = 94
    assert row_chunks(lines, strata, room=93.9) == [(0, 1, 2, 3), (4, 5)]


def test_plan_by_endpoint_then_stratum_with_captions():
    # two metric groups, 10 rows of 5 lines in two strata: each group 514pt, each stratum 274pt
    lines, strata = [[5, 5]] * 10, [0] * 5 + [1] * 5
    floats = plan(lines, strata, [(0,), (1,)], first_caption=50, later_caption=30, height=530)
    assert [[(b.metrics, b.rows) for b in f] for f in floats] == [
        [((0,), (0, 1, 2, 3, 4))],  # 50 + 274 = 324; another block: 324 + 8 + 274 > 530
        [((0,), (5, 6, 7, 8, 9))],
        [((1,), (0, 1, 2, 3, 4))],
        [((1,), (5, 6, 7, 8, 9))],
    ]
    assert [b.tail for f in floats for b in f] == [False, False, True, True]
    # with room for two blocks a float: two floats, one per metric group
    roomy = plan(lines, strata, [(0,), (1,)], first_caption=50, later_caption=30, height=1000)
    assert [len(f) for f in roomy] == [1, 1]  # each group's rows fit whole (50 + 514)...
    assert [b.rows for f in roomy for b in f] == [tuple(range(10))] * 2
    assert 50 + 514 + GAP + 514 > 1000  # ... but not both in one float
    both = plan(lines, strata, [(0,), (1,)], first_caption=50, later_caption=30, height=1086)
    assert [len(f) for f in both] == [2]


def test_plan_lead_lines_count():
    # stacked keys: a row as tall as its key cell
    one = plan([[1]], [0], [(0,)], lead_lines=[9], first_caption=0, later_caption=0, height=500)
    assert one == [[layout.Block((0,), (0,), tail=True)]]
    tall = [[1]] * 6
    floats = plan(tall, [0] * 6, [(0,)], lead_lines=[9] * 6, first_caption=0, later_caption=0,
                  height=300)  # fmt: skip
    assert [b.rows for f in floats for b in f] == [(0, 1, 2), (3, 4, 5)]  # 34 + 3 x 86 = 292


@pytest.mark.parametrize("seed", range(20))
def test_plan_covers_every_cell_once_and_each_float_fits(seed):
    rng = random.Random(seed)
    n_rows, n_metrics = rng.randint(1, 40), rng.randint(1, 9)
    lines = [[rng.randint(1, 7) for _ in range(n_metrics)] for _ in range(n_rows)]
    strata = sorted(rng.randint(0, 4) for _ in range(n_rows))
    widths = [rng.uniform(40, 160) for _ in range(n_metrics)]
    groups = metric_groups(rng.uniform(30, 150), widths)
    floats = plan(lines, strata, groups, first_caption=80, later_caption=40)
    cells = [(r, m) for f in floats for b in f for r in b.rows for m in b.metrics]
    assert sorted(cells) == list(itertools.product(range(n_rows), range(n_metrics)))
    for i, blocks in enumerate(floats):
        sizes = [
            block_height([max(lines[r][m] for m in b.metrics) for r in b.rows]) for b in blocks
        ]
        used = (80 if i == 0 else 40) + sum(sizes) + GAP * (len(sizes) - 1)
        assert used <= layout.FLOAT_HEIGHT
    order = [(groups.index(b.metrics), b.rows[0]) for f in floats for b in f]
    assert order == sorted(order)  # by endpoint, then the rows in the table's order


def test_text_width_by_hand():
    # cmr10: "0" and "5" 5.01pt, "." 2.78pt; normalsize 1.02 x, scriptsize 0.88 x (cmr7's widest
    # ratio, 2% more for kerns); any other character (Δ) 10pt at cmr10
    assert layout.text_width("0.5", "normalsize") == pytest.approx(1.02 * 12.8)
    assert layout.text_width("0.5", "scriptsize") == pytest.approx(0.88 * 12.8)
    assert layout.text_width("Δ", "footnotesize") == pytest.approx(0.87 * 10.0)
    assert layout.text_width("0.5", "bold") > layout.text_width("0.5", "footnotesize")


def test_block_height_tight_pitch_by_hand():
    # a tight stack: the first line 9.5pt, each further one 8pt
    assert block_height([3], pitch=layout.TIGHT_LINE) == pytest.approx(34 + 9.5 + 2 * 8 + 0.5)
    assert block_height([1, 1], pitch=layout.TIGHT_LINE) == block_height([1, 1])
    # the tighter pitch lets more rows into a chunk: 34 + 4 x 34 = 170 <= 170 < 34 + 4 x 38.5
    lines = [4] * 8
    tight = row_chunks(lines, [0] * 8, room=170, pitch=layout.TIGHT_LINE)
    assert tight == [(0, 1, 2, 3), (4, 5, 6, 7)]
    assert row_chunks(lines, [0] * 8, room=170) == [(0, 1, 2), (3, 4, 5), (6, 7)]


@pytest.mark.skipif(engine() is None, reason="no LaTeX engine (pdflatex, lualatex, tectonic)")
def test_text_width_is_an_upper_estimate_of_what_pdflatex_prints(tmp_path):
    texts = ["[-0.600, 0.608]", "[7.56e+07, 1.16e+15]", "scale_gradient", "WMWM mm %#",
             "(3 imputed)", "muzero.network.reward_support_size=null", "p=0.032*"]  # fmt: skip
    sizes = {"footnotesize": r"\footnotesize", "bold": r"\footnotesize\bfseries",
             "scriptsize": r"\scriptsize", "normalsize": r"\normalsize"}  # fmt: skip
    cases = list(itertools.product(texts, sizes))
    boxes = "".join(
        rf"\setbox0\hbox{{{sizes[size]} {latex_text(text)}}}\typeout{{WIDTH {i} \the\wd0}}"
        for i, (text, size) in enumerate(cases)
    )
    log = compile_table(boxes + "x", tmp_path)
    printed = {int(i): float(w) for i, w in re.findall(r"^WIDTH (\d+) ([\d.]+)pt", log, re.M)}
    assert len(printed) == len(cases)
    for i, (text, size) in enumerate(cases):  # at most 13% over (cmr7's widest ratio)
        estimate = layout.text_width(text, size)
        assert printed[i] <= estimate <= 1.15 * printed[i], (text, size, printed[i], estimate)
