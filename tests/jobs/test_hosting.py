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
    hosting.close_hosts()


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


def test_a_worker_keeps_its_last_two_hosts_and_ends_the_least_recently_used(tmp_path, monkeypatch):
    assert hosting.HOSTS == 2
    _, a = _record(tmp_path, "a1", monkeypatch, key="a")
    _, b = _record(tmp_path, "b1", monkeypatch, key="b")
    _, a2 = _record(tmp_path, "a2", monkeypatch, key="a")  # kept: its host, its second job
    assert (a2["pid"], a2["jobs"]) == (a["pid"], 2) and b["pid"] != a["pid"]
    _, c = _record(tmp_path, "c1", monkeypatch, key="c")  # a third: b, used least lately, ends
    assert c["pid"] not in (a["pid"], b["pid"]) and list(hosting._hosts) == ["a", "c"]
    _, b2 = _record(tmp_path, "b2", monkeypatch, key="b")  # a new host for b (a ends)
    assert b2["pid"] != b["pid"] and b2["jobs"] == 1 and list(hosting._hosts) == ["c", "b"]
    hosting.close_hosts()
    assert not hosting._hosts


def test_a_configuration_in_a_host_of_its_own_finds_its_programs_in_the_xla_cache(tmp_path):
    """Why each configuration gets a host of its own: TensorFlow names a traced function with a
    process-wide counter and XLA's persistent cache keys programs by that name, so a function
    traced after another one in the same process gets a name a fresh process never gives it,
    and compiles afresh although its program is on disk."""
    cache = tmp_path / "xla"

    def programs():
        return sorted(p.name for p in cache.glob("*XLA_CPU_JIT*"))

    first = hosting.run_hosted(targets.compile_programs, ["square"], str(cache), key="fresh")
    assert first.exitcode == 0 and len(programs()) == 1
    kept = programs()
    # the same function after another in one process: another name, compiled again
    both = hosting.run_hosted(targets.compile_programs, ["double", "square"], str(cache), key="x")
    assert both.value[1] != first.value[0]
    assert len(programs()) == 3 and set(kept) <= set(programs())
    hosting.close_hosts()
    # per configuration, as run_hosted keeps them: "double" in one host, then "square" in a
    # host of its own gets its first name back and loads its program (no new file)
    hosting.run_hosted(targets.compile_programs, ["double"], str(cache), key="double")
    square = hosting.run_hosted(targets.compile_programs, ["square"], str(cache), key="square")
    assert square.value == first.value and len(programs()) == 3


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
