"""``gradlab export``: a results folder as files other tools read: the runs and curves as CSV or
parquet (``files``), and the score matrix rliable takes (``scores``)."""

from experiments.report.export.files import FORMATS, score_files, tidy_files, write_files
from experiments.report.export.scores import Scores, score_matrix

__all__ = ["FORMATS", "Scores", "score_files", "score_matrix", "tidy_files", "write_files"]
