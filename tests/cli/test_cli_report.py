"""`gradlab table` and `gradlab plot` through Typer's CliRunner on the real app."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from typer.testing import CliRunner

from cli.main import app

runner = CliRunner()


def _job(root, name, *, status="completed", variant="none", seed=0, ablation="hs", ret=0.5):
    job = root / name
    job.mkdir(parents=True)
    summary = {"status": status, "job": name, "ablation": ablation, "group": {"variant": variant},
               "seed": seed, "threshold": 0.9, "stability": {"final_return": ret}}  # fmt: skip
    (job / "summary.json").write_text(json.dumps(summary))
    rows = [{"step": t, "loss/total": 1.0 / t, "eval/return": ret * t / 4} for t in range(1, 5)]
    (job / "metrics.jsonl").write_text("\n".join(json.dumps(r) for r in rows))


@pytest.fixture()
def folder(tmp_path):
    root = tmp_path / "hs"
    for seed, (a, b) in enumerate([(0.2, 0.5), (0.4, 0.9)]):
        _job(root, f"none-{seed}", variant="none", seed=seed, ret=a)
        _job(root, f"sg-{seed}", variant="scale_gradient", seed=seed, ret=b)
    _job(root, "sg-2", status="running", variant="scale_gradient", seed=2, ret=99.0)
    return root


def _header(stdout: str) -> list[str]:
    return [c.strip() for c in stdout.splitlines()[0].strip("|").split("|")]


def test_table_markdown(folder):
    result = runner.invoke(app, ["table", str(folder), "-m", "final_return"])
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert _header(result.stdout) == [
        "variant", "final return ↑", "final return Δ", "final return p_adj", "excluded"
    ]  # fmt: skip
    assert lines[2].startswith("| none ") and "0.300 [" in lines[2]  # mean of 0.2, 0.4
    # sg 0.5, 0.9 (mean 0.7) vs none 0.2, 0.4: Δ +0.4; Mann-Whitney, both sg above both none:
    # exact two-sided p = 2 / C(4, 2) = 1/3; m = 1: p_adj 0.33 >= 0.05, so not bold
    sg = [c.strip() for c in lines[3].strip("|").split("|")]
    assert sg[1].startswith("0.700 [") and sg[2].startswith("+0.400 [") and sg[3] == "0.33"
    assert "**" not in lines[3] and sg[4] == "1 running"
    # alpha 0.5: the same p is now below it, and the cell is bold
    result = runner.invoke(app, ["table", str(folder), "-m", "final_return", "--alpha", "0.5"])
    assert "**0.700**" in result.stdout and "α = 0.5" in result.stdout


def test_table_default_columns(folder):
    result = runner.invoke(app, ["table", str(folder)])
    assert result.exit_code == 0, result.output
    assert _header(result.stdout) == [
        "variant",
        "failed ↓", "failed Δ", "failed p_adj",
        "lost after learning ↓", "lost after learning Δ", "lost after learning p_adj",
        "never learned ↓", "never learned Δ", "never learned p_adj",
        "final return ↑", "final return Δ", "final return p_adj",
        "reached by end (CIF) ↑", "reached by end (CIF) Δ", "reached by end (CIF) p_adj",
        "grad norm p99 ↓", "grad norm p99 Δ", "grad norm p99 p_adj",
        "excluded",
    ]  # fmt: skip
    # recomputed from metrics.jsonl: none never reaches 0.9 (returns 0.2 t/4 and 0.4 t/4): failed
    # and never learned 2/2, lost after learning 0/2; sg's 0.9 run does at step 4: failed sg 1/2
    lines = result.stdout.splitlines()
    assert "0/2 [0.00, 0.84]" in lines[2] and "2/2 [0.16, 1.00]" in lines[2]
    assert "1/2 [0.01, 0.99]" in lines[3]
    assert "Fisher's exact test" in result.stdout and "Holm" in result.stdout


def test_table_analysis_and_rate_test(folder):
    result = runner.invoke(app, ["table", str(folder), "-m", "failed", "--analysis", "paired"])
    assert result.exit_code == 0, result.output
    assert "exact McNemar p" in result.stdout
    result = runner.invoke(app, ["table", str(folder), "-m", "failed", "--rate-test", "barnard"])
    assert result.exit_code == 0 and "Barnard's exact test" in result.stdout


def test_table_help_describes_the_rules():
    text = " ".join(runner.invoke(app, ["table", "--help"]).stdout.split())
    for piece in ["--analysis", "--rate-test", "--alpha", "--diverged-return", "Holm",
                  "intention to treat", "p_adj < alpha", "Gray's test"]:  # fmt: skip
        assert piece in text, piece
    assert "--p-better" not in text
    # -m's help names the table's default figures (experiments.report.table.DEFAULT_METRICS)
    from experiments.report.table import DEFAULT_METRICS

    clause = text.split("comma-separated (default:", 1)[1].split("; rates", 1)[0]
    assert [name.strip(" ,│") for name in clause.split(",")] == list(DEFAULT_METRICS)


def test_table_latex_to_file_and_json(folder, tmp_path):
    out = tmp_path / "t" / "table.tex"
    result = runner.invoke(app, ["table", str(folder), "--stat", "iqm", "--out", str(out)])
    assert result.exit_code == 2 and "does not exist (no folder is made" in result.output
    assert not out.parent.exists()  # a mistyped --out leaves no folder behind
    out.parent.mkdir()
    result = runner.invoke(app, ["table", str(folder), "--stat", "iqm", "--out", str(out)])
    assert result.exit_code == 0, result.output
    text = out.read_text()
    assert r"\toprule" in text and r"scale\_gradient" in text and "IQM" in text
    result = runner.invoke(app, ["table", str(folder), "-f", "json", "-m", "final_return"])
    assert json.loads(result.stdout)["rows"][1]["final_return"] == pytest.approx(0.7)


def test_table_caption_full_and_bad_choices(folder):
    short = runner.invoke(app, ["table", str(folder), "-f", "latex"])
    full = runner.invoke(app, ["table", str(folder), "-f", "latex", "--caption", "full"])
    assert short.exit_code == full.exit_code == 0, full.output
    assert full.stdout.startswith(short.stdout.rstrip("\n")) and "method.}" in full.stdout
    assert "method.}" not in short.stdout and "percentile-bootstrap" in full.stdout
    bad = runner.invoke(app, ["table", str(folder), "-f", "latex", "--caption", "long"])
    assert bad.exit_code == 2
    assert bad.output.strip() == "error: unknown --caption 'long'; choose one of: full, short"
    md = runner.invoke(app, ["table", str(folder), "--caption", "full"])
    assert md.exit_code == 2 and "--caption applies to -f latex" in md.output
    assert len(md.output.strip().splitlines()) == 1


def test_table_layout_full_and_bad_choices(folder):
    compact = runner.invoke(app, ["table", str(folder), "-f", "latex"])
    full = runner.invoke(app, ["table", str(folder), "-f", "latex", "--layout", "full"])
    assert compact.exit_code == full.exit_code == 0, compact.output
    first, rest = compact.stdout.split("\n", 1)
    assert first.startswith("% compact layout, not shown: Delta and its CI, lost after learning")
    assert "--layout full" in first and "lost after" not in rest.split("Not shown")[0]
    assert r"$\Delta$=" in full.stdout and r"$\Delta$=" not in compact.stdout
    assert "& lost after &" in full.stdout and full.stdout.startswith(r"\begin{table}")
    bad = runner.invoke(app, ["table", str(folder), "-f", "latex", "--layout", "wide"])
    assert bad.exit_code == 2
    assert bad.output.strip() == "error: unknown --layout 'wide'; choose one of: compact, full"
    md = runner.invoke(app, ["table", str(folder), "--layout", "full"])
    assert md.exit_code == 2 and "--layout applies to -f latex" in md.output
    assert len(md.output.strip().splitlines()) == 1


def test_plot(folder, tmp_path):
    result = runner.invoke(app, ["plot", str(folder), "--out", str(tmp_path / "figs")])
    assert result.exit_code == 0, result.output
    assert (tmp_path / "figs" / "return.png").stat().st_size > 0
    assert (tmp_path / "figs" / "outcome.pdf").stat().st_size > 0
    # return, final_return, loss, outcome (no grad; no profile below 10 runs an arm) x 2
    assert result.stdout.count("wrote ") == 8


def test_plot_several_folders_draws_the_outcome_figure_across_them(folder, tmp_path):
    other = tmp_path / "hs_b"
    _job(other, "none-0", variant="none", ret=0.95)
    out = tmp_path / "across"
    result = runner.invoke(app, ["plot", str(folder), str(other), "--out", str(out)])
    assert result.exit_code == 0, result.output
    assert sorted(p.name for p in out.iterdir()) == ["outcome.pdf", "outcome.png"]
    assert result.stdout.count("wrote ") == 2
    assert not (folder / "figures").exists() and not (other / "figures").exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        ([], "error: 2 folders given and no --out"),
        (["SAME", "--out", "OUT"], "given 2 times; pass distinct folders"),
    ],
)
def test_plot_several_folders_bad_input_is_one_line_exit_2(folder, tmp_path, extra, message):
    args = [str(folder), str(tmp_path / "hs_b")] if not extra else [str(folder), str(folder)]
    args += [str(tmp_path / "out") if a == "OUT" else a for a in extra if a != "SAME"]
    _job(tmp_path / "hs_b", "none-0")
    result = runner.invoke(app, ["plot", *args])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and message in result.stderr
    assert not (tmp_path / "out").exists()


def _corrupt(root):
    (root / "job").mkdir(parents=True)
    (root / "job" / "summary.json").write_text("{not json")


def _mixed(root):
    _job(root, "a", ablation="hs")
    _job(root, "b", ablation="clip")


@pytest.mark.parametrize(
    "make, args, message",
    [
        (None, [], "does not exist"),
        (lambda root: root.mkdir(), [], "no runs in"),
        (_corrupt, [], "corrupt summary file"),
        (_mixed, [], "mixed ablations"),
        (lambda root: _job(root, "a", status="running"), [], "no completed or diverged run"),
        (lambda root: _job(root, "a"), ["--stat", "mode"], "unknown statistic 'mode'"),
        (lambda root: _job(root, "a"), ["-f", "xml"], "unknown format 'xml'"),
        (lambda root: _job(root, "a"), ["-m", "nope"], "unknown metric 'nope'"),
        (
            lambda root: _job(root, "a"),
            ["--analysis", "both"],
            "unknown analysis 'both'; choose one of: independent, paired",
        ),
        (
            lambda root: _job(root, "a"),
            ["--rate-test", "chi2"],
            "unknown rate test 'chi2'; choose one of: barnard, fisher",
        ),
        (
            lambda root: _job(root, "a"),
            ["--alpha", "1.5"],
            "--alpha '1.5' is not valid; expected a number in (0, 1)",
        ),
        (lambda root: _job(root, "a"), ["--alpha", "x"], "--alpha 'x' is not valid"),
        (
            lambda root: _job(root, "a"),
            ["--diverged-return", "nan"],
            "--diverged-return 'nan' is not valid; expected a finite number",
        ),
    ],
)
def test_table_bad_input_is_one_line_exit_2(tmp_path, make, args, message):
    root = tmp_path / "results"
    if make is not None:
        make(root)
    result = runner.invoke(app, ["table", str(root), *args])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")
    assert message in result.stderr and "Traceback" not in result.output


@pytest.mark.parametrize("make", [None, _corrupt, _mixed])
def test_plot_bad_folder_is_one_line_exit_2(tmp_path, make):
    root = tmp_path / "results"
    if make is not None:
        make(root)
    result = runner.invoke(app, ["plot", str(root)])
    assert result.exit_code == 2
    assert result.stderr.count("\n") == 1 and result.stderr.startswith("error: ")


def test_report_commands_do_not_import_tensorflow(folder):
    code = (
        "import sys; from typer.testing import CliRunner; from cli.main import app; "
        f"r = CliRunner().invoke(app, ['table', {str(folder)!r}]); "
        "assert r.exit_code == 0, r.output; "
        "print(any(m == 'tensorflow' or m.startswith('tensorflow.') for m in sys.modules))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"
