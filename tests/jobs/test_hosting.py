"""The job host: a worker's jobs one after another in one process, isolated all the same."""

from __future__ import annotations

import json
import signal

import _host_targets as targets
import pytest

from experiments.jobs.process import hosting


@pytest.fixture(autouse=True)
def _no_host_left():
    yield
    host = hosting._hosts.pop("host", None)
    if host is not None:
        host.close()


def _record(tmp_path, name, monkeypatch, *, key="k", env="x", cwd=None):
    monkeypatch.setenv("GRADLAB_HOST_TEST", env)
    if cwd is not None:
        monkeypatch.chdir(cwd)
    out = tmp_path / f"{name}.json"
    ended = hosting.run_hosted(targets.record, str(out), key=key)
    return ended, json.loads(out.read_text())


def test_jobs_share_a_host_and_its_session_with_each_job_environment(tmp_path, monkeypatch):
    (tmp_path / "elsewhere").mkdir()
    ended1, first = _record(tmp_path, "a", monkeypatch, env="one")
    ended2, second = _record(tmp_path, "b", monkeypatch, env="two", cwd=tmp_path / "elsewhere")
    assert ended1.exitcode == ended2.exitcode == 0 and ended1.description == "exited normally"
    assert first["pid"] == second["pid"] == ended1.pid
    assert (first["jobs"], second["jobs"]) == (1, 2)  # one session for the host's jobs
    assert (first["env"], second["env"]) == ("one", "two")
    assert second["cwd"] == str(tmp_path / "elsewhere")


def test_other_process_settings_get_a_new_host(tmp_path, monkeypatch):
    _, first = _record(tmp_path, "a", monkeypatch, key=("threads", 1))
    _, second = _record(tmp_path, "b", monkeypatch, key=("threads", 2))
    assert first["pid"] != second["pid"] and second["jobs"] == 1


@pytest.mark.parametrize(
    ("target", "signal_", "exitcode"),
    [(targets.kill_self, signal.SIGKILL, None), (targets.raise_error, None, 1)],
)
def test_a_job_that_kills_its_host_is_one_failed_job(
    tmp_path, monkeypatch, target, signal_, exitcode
):
    _, before = _record(tmp_path, "a", monkeypatch)
    ended = hosting.run_hosted(target, key="k")
    assert (ended.signal, ended.exitcode, ended.pid) == (signal_, exitcode, before["pid"])
    assert ended.description != "exited normally"
    _, after = _record(tmp_path, "b", monkeypatch)  # the next job: a new host, a new session
    assert after["pid"] != before["pid"] and after["jobs"] == 1
