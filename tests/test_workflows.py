"""The GitHub Actions workflows and .github's other files: valid, audited, as intended.

Both tools run offline from .venv: check-jsonschema validates each file against its
bundled GitHub schema, zizmor audits .github/ for security (pedantic persona, so even
undocumented permissions are findings), including that every action is pinned to a
full commit SHA. Any finding fails; a finding that cannot be fixed would be explained
in .github/zizmor.yml.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
GITHUB = ROOT / ".github"
CI = GITHUB / "workflows" / "ci.yml"
PREVIEW = GITHUB / "workflows" / "preview.yml"
LOCKS = GITHUB / "workflows" / "locks.yml"
WORKFLOWS = [CI, PREVIEW, LOCKS]
SAME_REPO = "github.event.pull_request.head.repo.full_name == github.repository"
ISSUE_FORMS = sorted((GITHUB / "ISSUE_TEMPLATE").glob("*.yml"))
BIN = Path(sys.executable).parent
# the files of .github and the schema check-jsonschema has for them (one run each)
SCHEMAS = [
    (WORKFLOWS, "vendor.github-workflows"),
    ([GITHUB / "dependabot.yml"], "vendor.dependabot"),
    ([GITHUB / "ISSUE_TEMPLATE" / "config.yml"], "vendor.github-issue-config"),
    (
        [form for form in ISSUE_FORMS if form.name != "config.yml"],
        "vendor.github-issue-forms",
    ),
]


def _load(path: Path) -> dict:
    workflow = yaml.safe_load(path.read_text())
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1: `on` is True
    return workflow


def _steps(job: dict) -> list[dict]:
    return job.get("steps", [])


def test_the_three_workflows() -> None:
    names = sorted(p.name for p in (GITHUB / "workflows").iterdir())
    assert names == sorted(workflow.name for workflow in WORKFLOWS)


@pytest.mark.parametrize("paths, schema", SCHEMAS, ids=[s for _, s in SCHEMAS])
def test_files_match_githubs_schema(paths: list[Path], schema: str) -> None:
    result = subprocess.run(
        [BIN / "check-jsonschema", "--builtin-schema", schema, *paths],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_finds_nothing() -> None:
    """Also: every action pinned to a commit SHA (unpinned-uses, ref-version-mismatch)."""
    result = subprocess.run(
        [BIN / "zizmor", "--offline", "--pedantic", "--strict-collection", GITHUB],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_checkout_keeps_no_credentials_and_no_trigger_runs_untrusted_code() -> None:
    triggers = {path.name: set(_load(path)["on"]) for path in WORKFLOWS}
    assert triggers == {
        "ci.yml": {"push", "pull_request"},
        "preview.yml": {"pull_request"},
        "locks.yml": {"schedule", "workflow_dispatch", "pull_request"},
    }  # never pull_request_target or workflow_run: a fork's code gets no write token
    checkouts = [
        step
        for path in WORKFLOWS
        for job in _load(path)["jobs"].values()
        for step in _steps(job)
        if step.get("uses", "").startswith("actions/checkout@")
    ]
    assert len(checkouts) >= 7
    assert all(step["with"]["persist-credentials"] is False for step in checkouts)


def test_tests_run_ci_run_on_311_to_313_with_pip_cache() -> None:
    test = _load(CI)["jobs"]["test"]
    assert test["strategy"]["matrix"]["python"] == ["3.11", "3.12", "3.13"]
    assert [step["run"] for step in _steps(test) if "run" in step] == ["bash .ci/run"]
    setups = [
        step
        for job in _load(CI)["jobs"].values()
        for step in _steps(job)
        if step.get("uses", "").startswith("actions/setup-python@")
    ]
    assert setups and all(step["with"]["cache"] == "pip" for step in setups)


def test_the_site_is_built_and_published_only_after_the_tests_pass() -> None:
    jobs = _load(CI)["jobs"]
    assert jobs["build"]["needs"] == "test"
    assert jobs["deploy"]["needs"] == jobs["preview"]["needs"] == "build"
    assert "make build" in [step.get("run") for step in _steps(jobs["build"])]
    on_main = "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert jobs["deploy"]["if"] == on_main
    runs = [step.get("run") for step in _steps(jobs["deploy"])]
    assert "bash .ci/pages-branch publish site ." in runs


def test_only_the_publishing_jobs_may_write_each_what_it_needs() -> None:
    assert _load(CI)["permissions"] == {"contents": "read"}
    assert _load(PREVIEW)["permissions"] == _load(LOCKS)["permissions"] == {}
    writers = {
        (path.name, name): job["permissions"]
        for path in WORKFLOWS
        for name, job in _load(path)["jobs"].items()
        if "write" in job.get("permissions", {}).values()
    }
    assert writers == {
        ("ci.yml", "deploy"): {"contents": "write"},
        ("ci.yml", "preview"): {
            "contents": "write",
            "pull-requests": "write",
            "pages": "read",
        },
        ("preview.yml", "remove"): {"contents": "write"},
        ("locks.yml", "pull-request"): {"contents": "write", "pull-requests": "write"},
    }
    # the jobs that push to the Pages branch never run at once
    groups = {
        _load(path)["jobs"][name]["concurrency"]["group"]
        for path, name in [(CI, "deploy"), (CI, "preview"), (PREVIEW, "remove")]
    }
    assert groups == {"pages-branch"}


def test_the_build_links_the_repository_and_the_pages_address() -> None:
    build = _load(CI)["jobs"]["build"]
    env = next(step["env"] for step in _steps(build) if step.get("run") == "make build")
    assert env["REPO_URL"] == "${{ github.server_url }}/${{ github.repository }}"
    assert "steps.pages.outputs.base_url" in env["SITE_URL"]


def test_the_site_is_uploaded_and_the_template_says_how_to_open_it() -> None:
    build = _load(CI)["jobs"]["build"]
    upload = next(
        step
        for step in _steps(build)
        if step.get("uses", "").startswith("actions/upload-artifact@")
    )
    assert "if" not in upload  # for a pull request's download and main's publication
    assert upload["with"] == {"name": "site", "path": "site", "retention-days": 14}
    template = (GITHUB / "pull_request_template.md").read_text()
    assert "python -m http.server -d site" in template and "pr-<n>/" in template


def test_a_pull_request_from_this_repository_gets_a_linked_preview() -> None:
    preview = _load(CI)["jobs"]["preview"]
    assert preview["if"] == f"github.event_name == 'pull_request' && {SAME_REPO}"
    runs = "\n".join(step.get("run", "") for step in _steps(preview))
    assert 'bash .ci/pages-branch publish site "pr-$PR"' in runs
    assert "gh pr comment" in runs and "/pr-$PR/" in runs
    assert "fork gets no hosted preview" in runs and "artifact **site**" in runs


def test_a_forks_pull_request_keeps_the_artifact_and_its_summary_says_so() -> None:
    build = _load(CI)["jobs"]["build"]
    fork = next(step for step in _steps(build) if "fork" in step.get("name", ""))
    assert fork["if"] == (
        "github.event_name == 'pull_request' && "
        "github.event.pull_request.head.repo.full_name != github.repository"
    )
    assert "GITHUB_STEP_SUMMARY" in fork["run"] and "artifact **site**" in fork["run"]


def test_a_closed_pull_requests_preview_is_removed() -> None:
    workflow = _load(PREVIEW)
    assert workflow["on"] == {"pull_request": {"types": ["closed"]}}
    remove = workflow["jobs"]["remove"]
    assert remove["if"] == SAME_REPO
    runs = [step.get("run") for step in _steps(remove)]
    assert 'bash .ci/pages-branch remove "pr-$PR"' in runs


def test_the_locks_are_regenerated_weekly_and_dry_run_on_a_pull_request() -> None:
    workflow = _load(LOCKS)
    assert (
        workflow["on"]["schedule"]
        and "requirements*" in (workflow["on"]["pull_request"]["paths"])
    )
    regenerate, propose = (
        workflow["jobs"]["regenerate"],
        workflow["jobs"]["pull-request"],
    )
    assert "if" not in regenerate  # on every trigger: the pull request's dry run too
    assert "bash .ci/update-locks" in [step.get("run") for step in _steps(regenerate)]
    assert propose["if"] == "github.event_name != 'pull_request'"
    assert propose["needs"] == "regenerate"
    assert "gh pr create" in _steps(propose)[-1]["run"]


def test_update_locks_runs_the_command_at_the_top_of_each_hashed_lock() -> None:
    result = subprocess.run(
        ["bash", ROOT / ".ci" / "update-locks", "--print"],
        capture_output=True,
        text=True,
        check=True,
    )
    locks = [
        "requirements.lock",
        "requirements-test.lock",
        "requirements-zensical.lock",
    ]
    headers = [
        next(
            line.removeprefix("#    ")
            for line in (ROOT / lock).read_text().splitlines()
            if line.startswith("#    pip-compile ")
        )
        for lock in locks
    ]
    assert result.stdout.splitlines() == headers
    assert all("--generate-hashes" in command for command in headers)


def _git(*args: str | Path, cwd: Path | None = None) -> str:
    result = subprocess.run(
        ["git", *map(str, args)], capture_output=True, text=True, check=True, cwd=cwd
    )
    return result.stdout


def test_the_pages_branch_holds_the_site_and_each_preview_until_removed(
    tmp_path: Path,
) -> None:
    """.ci/pages-branch against a local repository: publish main's site, a preview,
    main's again (the preview stays), a dry run (nothing pushed), the removal."""
    remote = tmp_path / "remote.git"
    _git("init", "--quiet", "--bare", remote)
    env = {"PATH": os.environ["PATH"], "HOME": str(tmp_path), "REMOTE": str(remote)}

    def pages(*args: str, **extra: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            ["bash", ROOT / ".ci" / "pages-branch", *args],
            capture_output=True,
            text=True,
            env=env | extra,
        )

    def tree() -> list[str]:
        return sorted(
            _git("ls-tree", "-r", "--name-only", "gh-pages", cwd=remote).split()
        )

    for name, text in [("main", "main v1"), ("pr", "preview"), ("main2", "main v2")]:
        (tmp_path / name).mkdir()
        (tmp_path / name / "index.html").write_text(text)
    assert pages("publish", str(tmp_path / "main"), ".").returncode == 0
    assert pages("publish", str(tmp_path / "pr"), "pr-3").returncode == 0
    assert pages("publish", str(tmp_path / "main2"), ".").returncode == 0
    assert tree() == [".nojekyll", "index.html", "pr-3/index.html"]
    assert _git("show", "gh-pages:index.html", cwd=remote) == "main v2"
    dry = pages("remove", "pr-3", DRY_RUN="1")
    assert dry.returncode == 0 and "dry run" in dry.stdout
    assert "pr-3/index.html" in tree()
    assert pages("remove", "pr-3").returncode == 0
    assert tree() == [".nojekyll", "index.html"]
    refused = pages("remove", "../x")
    assert refused.returncode == 2 and "pr-<number>" in refused.stderr


def test_the_three_issue_forms() -> None:
    names = {yaml.safe_load(form.read_text()).get("name") for form in ISSUE_FORMS}
    assert names >= {
        "A number looks wrong",
        "An explanation is unclear",
        "A new explanation",
    }


def test_dependabot_updates_the_actions_and_the_locks_workflow_the_locks() -> None:
    """Dependabot's pip support reads requirements .txt/.in files, not our locks."""
    config = yaml.safe_load((GITHUB / "dependabot.yml").read_text())
    ecosystems = {update["package-ecosystem"] for update in config["updates"]}
    assert ecosystems == {"github-actions"}


def test_zensical_is_pinned_with_hashes_and_its_job_may_fail_until_it_builds_all():
    job = _load(CI)["jobs"]["zensical"]
    assert [step["run"] for step in _steps(job) if "run" in step] == ["make zensical"]
    makefile = (ROOT / "Makefile").read_text()
    assert "--require-hashes -r requirements-zensical.lock" in makefile
    lock = (ROOT / "requirements-zensical.lock").read_text()
    assert re.search(r"^zensical==[\d.]+ \\\n    --hash=sha256:", lock, re.M)
    # allowed to fail while CONTRIBUTING says it does not build every page
    contributing = (ROOT / "CONTRIBUTING.md").read_text()
    assert job["continue-on-error"] is ("so the report\nstill fails" in contributing)
