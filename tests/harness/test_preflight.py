"""The preflight: a user's mistake (a port nothing listens on, a model the server does not list, a server that
wants a key, CUDA asked for on a build without it, a factory the module lacks) is one usage error, exit 2, before
any check runs and with no run folder; ``specconform doctor`` says what each check will be able to judge."""

import socket

import httpx2
import pytest

from specconform.harness import cli, preflight
from specconform.harness.core import UsageError
from tests.harness.served_stand_in import served
from tests.harness.test_api_spec_counters import SpecServer, fake_vllm, route_clients


def invoke(argv, capsys) -> tuple[int, str, str]:
    try:
        status = cli.main(argv)
    except SystemExit as exc:
        status = exc.code
    out, err = capsys.readouterr()
    return status, out, err


def a_closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def refuses_its_name():
    """A factory that refuses how it was named, as ``make_engine`` does (run in the engine's own process)."""
    raise UsageError("this engine wants --profile strict")


def assert_one_usage_error(status, out, err, *says):
    assert status == 2, err
    assert out == "" and "Traceback" not in err
    assert len(err.strip().splitlines()) == 1, err
    for word in says:
        assert word in err, (word, err)


def test_a_wrong_port_is_one_line_and_writes_nothing(tmp_path, capsys):
    url = f"http://127.0.0.1:{a_closed_port()}/v1"
    argv = ["run", "--engine", "openai", "--base-url", url, "--model", "m", "--report-dir", str(tmp_path / "runs")]
    assert_one_usage_error(*invoke(argv, capsys), "--base-url", url, "no server answers")
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "option, typo, says",
    [
        ("--model", "tiny-thnk", ["--model 'tiny-thnk'", "it serves: tiny-think"]),
        ("--spec-model", "tiny-think-spc", ["--spec-model 'tiny-think-spc'", "it serves: tiny-think-spec"]),
    ],
)
def test_a_model_the_server_lacks_is_named_with_what_it_lists(option, typo, says, tmp_path, monkeypatch, capsys):
    route_clients(monkeypatch, fake_vllm(SpecServer(None), []))
    options = {"--model": "tiny-think", "--spec-model": "tiny-think-spec", option: typo}
    argv = ["run", "--engine", "openai", "--base-url", "http://think.test/v1", "--spec-base-url", "http://spec.test/v1"]
    argv += [word for pair in options.items() for word in pair] + ["--report-dir", str(tmp_path)]
    assert_one_usage_error(*invoke(argv, capsys), *says)
    assert list(tmp_path.iterdir()) == []


@pytest.mark.parametrize(
    "status, says", [(401, ["HTTP 401", "--api-key", "OPENAI_API_KEY"]), (404, ["HTTP 404", "/v1"])]
)
def test_a_refused_listing_names_what_to_change(status, says, monkeypatch):
    route_clients(monkeypatch, httpx2.MockTransport(lambda request: httpx2.Response(status)))
    with pytest.raises(UsageError) as error:
        preflight.check_engines(["openai"], {"base_url": "http://think.test", "model": "m"})
    for word in says:
        assert word in str(error.value)


def test_a_server_without_a_listing_is_not_refused(monkeypatch):
    route_clients(monkeypatch, httpx2.MockTransport(lambda request: httpx2.Response(500, text="no")))
    listing, shape = preflight.check_engines(["openai"], {"base_url": "http://x.test/v1", "model": "m"})["openai"]
    assert "'m' is unchecked" in listing
    assert "a chat request with API profile vllm's fields: HTTP 500" in shape  # nor refused for its answer's shape


def test_cuda_asked_for_without_cuda_is_a_usage_error(tmp_path, capsys):
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("this machine has CUDA")
    argv = ["run", "--engine", "reference:cuda", "--check", "rejection/greedy", "--report-dir", str(tmp_path)]
    assert_one_usage_error(*invoke(argv, capsys), "'reference:cuda'", "CUDA is not available", "reference:cpu")
    assert list(tmp_path.iterdir()) == []


def test_a_factory_the_module_lacks_is_named_with_what_it_defines(tmp_path, capsys):
    argv = ["run", "--engine", "tests.harness.test_preflight:nosuch", "--report-dir", str(tmp_path)]
    assert_one_usage_error(*invoke(argv, capsys), "'nosuch'", "refuses_its_name", "a_closed_port")
    assert list(tmp_path.iterdir()) == []


def test_a_factory_that_refuses_its_name_leaves_no_run_folder(tmp_path, capsys):
    argv = ["run", "--engine", "tests.harness.test_preflight:refuses_its_name", "--check", "rejection/greedy"]
    argv += ["--report-dir", str(tmp_path / "made" / "runs"), "--quiet"]
    assert_one_usage_error(*invoke(argv, capsys), "wants --profile strict")
    assert list(tmp_path.iterdir()) == []  # not even the folders the run made for its reports


def test_doctor_says_what_the_server_offers_and_what_each_check_will_judge(capsys):
    """Against a stand-in without a speculative model: token ids and /tokenize are there, so the API checks that
    need only them are judged; those needing a speculative model are PRECONDITION_FAILED, and the kernel-level
    classes collapse into one NOT_CLAIMED line."""
    with served(fake_vllm(None, [])) as url:
        status, out, err = invoke(
            ["doctor", "--engine", "openai", "--base-url", url, "--model", "tiny-think", "--timeout", "120"], capsys
        )
    assert status == 0, err
    assert "serves 'tiny-think'" in out
    assert "token ids (return_token_ids): present" in out
    assert "/tokenize: answers" in out
    assert "API-SPEC-3 will be PRECONDITION_FAILED" in out
    lines = out.splitlines()
    judged = [line for line in lines if line.split()[:1] == ["judged"]]
    lacking = [line for line in lines if line.split()[:1] == ["PRECONDITION_FAILED"]]
    assert judged and all(" api/" in line for line in judged)
    assert lacking and all("the engine lacks spec-model" in line or "plain-model" in line for line in lacking)
    (unclaimed,) = [line for line in lines if line.split()[:1] == ["NOT_CLAIMED"]]
    assert "tb." in unclaimed and "rs." in unclaimed


def test_doctor_with_a_wrong_model_is_one_usage_error(capsys):
    with served(fake_vllm(None, [])) as url:
        argv = ["doctor", "--engine", "openai", "--base-url", url, "--model", "nosuch"]
        assert_one_usage_error(*invoke(argv, capsys), "--model 'nosuch'", "tiny-think")
