"""``python -m cli``: the ``gradlab`` command line, as the console script runs it."""

from cli.main import app

app(prog_name="gradlab")
