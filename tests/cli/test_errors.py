"""cli/_errors.py's guard: a ConfigError from a command is ``error: <message>`` on stderr and
exit 2, no traceback; any other exception is not swallowed; a command's return passes through."""

from __future__ import annotations

import typer
from typer.testing import CliRunner

from cli._errors import USAGE_ERROR, guarded
from experiments.base.errors import ConfigError


def _app() -> typer.Typer:
    app = typer.Typer()

    @app.command()
    @guarded
    def go(what: str = "ok") -> None:
        """A command whose behaviour the test picks."""
        if what == "config":
            raise ConfigError("unknown thing 'x'; choose one of: a, b")
        if what == "bug":
            raise RuntimeError("a bug, not bad input")
        typer.echo("done")

    return app


def test_config_error_is_one_line_and_exit_2():
    result = CliRunner().invoke(_app(), ["--what", "config"])
    assert USAGE_ERROR == 2 and result.exit_code == 2
    assert result.stderr == "error: unknown thing 'x'; choose one of: a, b\n"
    assert result.stdout == "" and "Traceback" not in result.output


def test_other_errors_are_not_bad_input():
    result = CliRunner().invoke(_app(), ["--what", "bug"])
    assert result.exit_code == 1 and isinstance(result.exception, RuntimeError)


def test_a_good_call_passes_through():
    result = CliRunner().invoke(_app(), [])
    assert result.exit_code == 0 and result.stdout == "done\n"


def test_the_wrapped_command_keeps_its_name_and_help():
    def command(x: int) -> int:
        """Doubles."""
        return 2 * x

    wrapped = guarded(command)
    assert wrapped.__name__ == "command" and wrapped.__doc__ == "Doubles." and wrapped(4) == 8
