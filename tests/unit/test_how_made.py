"""How a run was made: the command, script, versions, compile environment and changed
compiler settings are recorded, secrets are left out, and every report shows them with one
copyable repro line."""

from __future__ import annotations

import shlex
from pathlib import Path

import pytest

from dynaprof.analysis import how_made
from dynaprof.model import ConfigChange
from dynaprof.model.codec import from_json, to_json
from dynaprof.model.environment import REDACTED, compile_env, looks_secret, redact_argv
from dynaprof.model.session import Session
from dynaprof.render.compare_report import compare_markdown
from dynaprof.render.markdown import summary_markdown
from dynaprof.render.terminal import summary_text
from tests.factories import make_session, seed_session
from tests.helpers import GH_TOKEN, RANDOM_SECRET, recompile_limit_name, requires_torch

# -- the rules (model.environment) ----------------------------------------------------------------


def test_argv_secrets_lose_their_values_and_keep_their_names() -> None:
    argv = ["train.py", "--token=abc", "--api-key", "xyz", "--lr", "0.1", "HF_TOKEN=zzz", "--out=/tmp/run",
            GH_TOKEN, RANDOM_SECRET, "https://me:hunter2@example.com/repo.git", "--password", "--verbose"]
    assert redact_argv(argv) == [
        "train.py", f"--token={REDACTED}", "--api-key", REDACTED, "--lr", "0.1", f"HF_TOKEN={REDACTED}",
        "--out=/tmp/run", REDACTED, REDACTED, f"https://me:{REDACTED}@example.com/repo.git", "--password",
        "--verbose"]
    assert redact_argv(redact_argv(argv)) == redact_argv(argv)  # renderers apply it again: no change


@pytest.mark.parametrize("value", ["resnet50_batch128_lr0001", "/very/long/path/to/the/model_checkpoint_v2.pt",
                                   "cf30153c4c131c8164ee7798e5022d810682e2cb", "2.13.0+cpu", "aot_eager",
                                   "max-autotune-no-cudagraphs", "configs/llama_7b_fsdp_bf16.yaml"])
def test_ordinary_values_are_not_taken_for_secrets(value: str) -> None:
    assert not looks_secret(value)
    assert redact_argv(["x.py", value]) == ["x.py", value]


def test_compile_env_keeps_compile_variables_and_hides_secret_values() -> None:
    environ = {"TORCH_LOGS": "recompiles", "TORCHINDUCTOR_CACHE_DIR": "/tmp/c", "TORCHDYNAMO_VERBOSE": "1",
               "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "TORCH_HUB_TOKEN": "s3cr3t",
               "HOME": "/root", "HF_TOKEN": "nope", "PATH": "/bin", "TORCHX": "not a prefix"}
    assert compile_env(environ) == {
        "PYTORCH_CUDA_ALLOC_CONF": "expandable_segments:True", "TORCHDYNAMO_VERBOSE": "1",
        "TORCHINDUCTOR_CACHE_DIR": "/tmp/c", "TORCH_HUB_TOKEN": REDACTED, "TORCH_LOGS": "recompiles"}


# -- the words (analysis.how_made) ---------------------------------------------------------------


def _made(target: str = "/work/proj/train.py") -> Session:
    s = seed_session()
    s.run.cwd = "/work/proj"
    s.run.target = target
    s.run.command = ["dynaprof", "run", "-o", "/work/proj/out", target, "--api-key", "k", "--name", "a b"]
    s.run.torch_git_version = "cf30153c4c131c8164ee7798e5022d810682e2cb"
    s.run.env = {"TORCH_LOGS": "+dynamo,recompiles", "TORCH_HUB_TOKEN": REDACTED}
    s.run.config = [ConfigChange("dynamo", "recompile_limit", "3", "8"),
                    ConfigChange("inductor", "max_autotune", "True", "False")]
    return s


def test_repro_line_is_relative_quoted_and_secret_free() -> None:
    s = _made()
    line = how_made.repro_line(s)
    assert line == ("TORCH_LOGS=+dynamo,recompiles TORCH_HUB_TOKEN=... "
                    "dynaprof run -o out train.py --api-key '<redacted>' --name 'a b'")
    assert shlex.split(line)[-2:] == ["--name", "a b"]  # pastes back into the same words
    assert how_made.script_path(s.run) == "train.py"
    s.run.target = "/elsewhere/t.py"
    assert how_made.script_path(s.run) == "/elsewhere/t.py"  # short: as typed
    s.run.cwd = ""
    assert how_made.script_path(s.run) == "t.py"  # no working directory known: never an absolute path


def test_a_long_script_path_reads_relative_or_as_its_folder_and_file() -> None:
    """Titles once showed ../../../../../x/y/script.py; the repro line keeps a runnable path."""
    s = make_session([])
    s.run.cwd = "/home/me/work/projects/deep/er"
    s.run.target = "/home/me/work/projects/deep/er/some/rather/long/folder/names/here/train.py"
    assert how_made.script_path(s.run) == "some/rather/long/folder/names/here/train.py"
    s.run.target = "/opt/another/tree/with/a/long/enough/name/for/this/x/y/script.py"
    assert how_made.script_path(s.run) == "y/script.py"
    s.run.cwd = "/opt/another/tree/with/a/long/enough/name/for/that"
    assert how_made.script_path(s.run) == "../this/x/y/script.py"


def test_facts_name_versions_environment_and_settings() -> None:
    facts = dict(how_made.provenance_facts(_made()))
    assert facts["versions"].startswith("dynaprof ") and "(git cf30153c4c13)" in facts["versions"]
    assert facts["compile environment"] == f"TORCH_LOGS=+dynamo,recompiles, TORCH_HUB_TOKEN={REDACTED}"
    assert facts["changed compiler settings"] == ("dynamo.recompile_limit = 3 (default 8); "
                                                  "inductor.max_autotune = True (default False)")
    plain = seed_session()
    plain.run.env, plain.run.config = {}, []
    facts = dict(how_made.provenance_facts(plain))
    assert facts["compile environment"] == "none set" and facts["changed compiler settings"] == "all defaults"
    plain.run.env = plain.run.config = None
    plain.capture.source = "torch_trace"
    plain.run.command = ["/logs/dedicated_log_torch_trace_rank_0.log"]  # what the importer records
    facts = dict(how_made.provenance_facts(plain))
    assert facts["compile environment"].startswith("unknown (the TORCH_TRACE log")
    assert facts["command"] == "?" and how_made.repro_line(plain) == "?"  # a log is no command to re-run


def test_differences_between_two_runs() -> None:
    base, new = _made(), _made()
    new.run.env = {"TORCH_LOGS": "recompiles", "TORCH_HUB_TOKEN": REDACTED}
    new.run.config = [ConfigChange("dynamo", "recompile_limit", "3", "8")]
    assert how_made.differences(base, new) == ["compile environment variables differ: TORCH_LOGS",
                                               "compiler settings differ: inductor.max_autotune"]
    assert how_made.differences(base, _made()) == []


# -- the reports ----------------------------------------------------------------------------------


def test_every_report_shows_how_it_was_made() -> None:
    s = _made()
    text = summary_text(s, 12, 60)
    assert "made with: dynaprof" in text and "1 changed setting" not in text and "2 changed settings" in text
    repro = text.split("repro (in the run's working directory):\n", 1)[1]
    assert all(len(line) <= 60 for line in repro.splitlines())
    assert shlex.split(repro.replace("\\\n", " ")) == shlex.split(how_made.repro_line(s))  # still copyable
    md = summary_markdown(s)
    assert md.startswith("### dynaprof: train.py\n")  # the title: relative, never absolute
    assert "| changed compiler settings | dynamo.recompile\\_limit = 3 (default 8); inductor.max\\_autotune" in md
    assert f"```sh\n{how_made.repro_line(s)}\n```" in md
    assert "/work/proj" not in md.split("\n", 1)[0]


def test_html_report_shows_the_section(tmp_path: Path) -> None:
    from dynaprof.render.base import RenderContext, RenderOptions
    from dynaprof.render.report_html import report_html

    s = _made()
    page = report_html(RenderContext(s, RenderOptions()))
    assert "How it was made</h2>" in page
    assert "<dt>changed compiler settings</dt><dd>dynamo.recompile_limit = 3 (default 8);" in page
    assert "dynaprof run -o out train.py --api-key &#39;&lt;redacted&gt;&#39; --name &#39;a b&#39;</pre>" in page
    assert "<title>dynaprof: train.py</title>" in page


def test_pr_comment_of_two_runs_shows_both_and_their_differences() -> None:
    from dynaprof.analysis.compare import compare_sessions

    base, new = _made(), _made()
    new.run.config = []
    text = compare_markdown(compare_sessions(base, new), base, new, ("base", "new"), [])
    assert "> Note: the runs were made differently: compiler settings differ: dynamo.recompile\\_limit, " \
           "inductor.max\\_autotune" in text
    assert "| changed compiler settings | dynamo.recompile\\_limit = 3 (default 8); " in text
    assert text.count(f"```sh\n{how_made.repro_line(base)}\n```") == 2
    assert len(text) < 65536


def test_older_sessions_load_with_provenance_unknown() -> None:
    data = to_json(seed_session())
    for key in ("torch_git_version", "env", "config"):
        del data["run"][key]
    s = from_json(Session, data)
    assert (s.run.torch_git_version, s.run.env, s.run.config) == (None, None, None)
    again = from_json(Session, to_json(_made()))
    assert again.run.config == _made().run.config and again.run.env == _made().run.env


# -- capture -------------------------------------------------------------------------------------


@pytest.mark.torch
def test_config_changes_reads_what_differs_from_the_defaults() -> None:
    import torch._dynamo.config as dc
    import torch._functorch.config as fc

    from dynaprof.capture.torch_config import config_changes

    limit = recompile_limit_name()
    with dc.patch(**{limit: 5}), fc.patch(debug_assert=True):
        changes, errors = config_changes()
        skipped, _ = config_changes(frozenset({("functorch", "debug_assert")}))
    assert errors == []
    assert ["dynamo", limit, "5", "8"] in changes
    assert ["functorch", "debug_assert", "True", "False"] in changes
    assert ["functorch", "debug_assert", "True", "False"] not in skipped
    after, _ = config_changes()
    assert ["dynamo", limit, "5", "8"] not in after


@pytest.mark.torch
@requires_torch("2.5", "cache_size_limit is an alias of recompile_limit only on newer torches")
def test_a_config_alias_is_listed_as_its_target() -> None:
    import torch._dynamo.config as dc

    from dynaprof.capture.torch_config import config_changes

    with dc.patch(cache_size_limit=5):
        changes, _ = config_changes()
    assert ["dynamo", "recompile_limit", "5", "8"] in changes
    assert not any(c[1] == "cache_size_limit" for c in changes)


