"""A check that kills a server costs only its own verdict: it stays ERROR with its cause, its record
says which server no longer answers, and the next check runs on the server the restart command
brought back; without a restart command the later checks say why they cannot run."""

import pytest

from specconform.harness import runner
from specconform.harness.core import Context
from specconform.harness.isolation import EngineProcess

from . import dying_server


def _run(tmp_path, monkeypatch, restart_command: str, dies_late: bool = False) -> list:
    (tmp_path / "alive").touch()
    monkeypatch.setenv("SPECCONFORM_TEST_DIES_LATE", "1" if dies_late else "")
    monkeypatch.setenv("SPECCONFORM_TEST_SERVER_DIR", str(tmp_path))
    monkeypatch.setenv("SPECCONFORM_TEST_RESTART", restart_command)
    engine = EngineProcess("tests.harness.dying_server:make", catalogue="tests.harness.dying_server:checks")
    try:
        return runner.run_checks(
            engine, dying_server.checks(), lambda info: Context(profile=info.profile), timeout_s=120
        )
    finally:
        engine.stop()


@pytest.mark.req("RUN-STATUS-1")
@pytest.mark.parametrize("dies_late", [False, True], ids=["dies-at-once", "answers-once-more"])
def test_the_check_after_a_killed_server_runs_on_the_restarted_one(tmp_path, monkeypatch, dies_late):
    restart = f'echo "$SPECCONFORM_BASE_URL" >> {tmp_path}/restarted && touch {tmp_path}/alive'
    killed, after = _run(tmp_path, monkeypatch, restart, dies_late)
    assert killed.status == "ERROR" and killed.message.startswith("InternalServerError: Error code: 500")
    assert f"[after this check the server at {dying_server.SPEC_URL} no longer answers: ConnectError" in killed.message
    assert after.status == "PASS" and after.results["API-SPEC-3"].status == "PASS"
    assert f"before this check the server at {dying_server.SPEC_URL} did not answer" in after.message
    assert (tmp_path / "restarted").read_text().split() == [dying_server.SPEC_URL]


@pytest.mark.req("RUN-STATUS-1")
@pytest.mark.parametrize(
    "restart_command,says",
    [("", "no --restart-command was given"), ("echo no such server >&2; exit 3", "exited with code 3: no such server")],
)
def test_a_server_that_cannot_be_restarted_is_named_in_every_later_record(tmp_path, monkeypatch, restart_command, says):
    killed, after = _run(tmp_path, monkeypatch, restart_command)
    assert killed.status == "ERROR" and "no longer answers" in killed.message
    assert after.status == "ERROR" and after.results["API-SPEC-3"].status == "ERROR"
    assert f"ServerDown: the server at {dying_server.SPEC_URL} does not answer (ConnectError" in after.message
    assert says in after.message
