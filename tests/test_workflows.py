"""The GitHub Actions workflows and .github's other files: valid, audited, as intended.

Both tools run offline from .venv: check-jsonschema validates each file against its
bundled GitHub schema, zizmor audits .github/ for security (pedantic persona, so even
undocumented permissions are findings), including that every action is pinned to a
full commit SHA. Any finding fails; a finding that cannot be fixed would be explained
in .github/zizmor.yml.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
GITHUB = ROOT / ".github"
CI = GITHUB / "workflows" / "ci.yml"
ISSUE_FORMS = sorted((GITHUB / "ISSUE_TEMPLATE").glob("*.yml"))
BIN = Path(sys.executable).parent
# each file of .github and the schema check-jsonschema has for it
SCHEMAS = [
    (CI, "vendor.github-workflows"),
    (GITHUB / "dependabot.yml", "vendor.dependabot"),
    (GITHUB / "ISSUE_TEMPLATE" / "config.yml", "vendor.github-issue-config"),
    *(
        (form, "vendor.github-issue-forms")
        for form in ISSUE_FORMS
        if form.name != "config.yml"
    ),
]


def _load(path: Path) -> dict:
    workflow = yaml.safe_load(path.read_text())
    workflow["on"] = workflow.pop(True, workflow.get("on"))  # YAML 1.1: `on` is True
    return workflow


def _steps(job: dict) -> list[dict]:
    return job.get("steps", [])


def test_there_is_one_workflow() -> None:
    assert sorted(p.name for p in (GITHUB / "workflows").iterdir()) == ["ci.yml"]


@pytest.mark.parametrize(
    "path, schema", SCHEMAS, ids=lambda x: x.name if isinstance(x, Path) else x
)
def test_file_matches_githubs_schema(path: Path, schema: str) -> None:
    result = subprocess.run(
        [BIN / "check-jsonschema", "--builtin-schema", schema, path],
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
    workflow = _load(CI)
    assert set(workflow["on"]) == {"push", "pull_request"}
    checkouts = [
        step
        for job in workflow["jobs"].values()
        for step in _steps(job)
        if step.get("uses", "").startswith("actions/checkout@")
    ]
    assert checkouts
    assert all(step["with"]["persist-credentials"] is False for step in checkouts)


def test_tests_run_ci_run_on_311_and_312_with_pip_cache() -> None:
    test = _load(CI)["jobs"]["test"]
    assert test["strategy"]["matrix"]["python"] == ["3.11", "3.12"]
    assert [step["run"] for step in _steps(test) if "run" in step] == ["bash .ci/run"]
    setups = [
        step
        for job in _load(CI)["jobs"].values()
        for step in _steps(job)
        if step.get("uses", "").startswith("actions/setup-python@")
    ]
    assert setups and all(step["with"]["cache"] == "pip" for step in setups)


def test_the_site_is_built_and_deployed_only_after_the_tests_pass() -> None:
    jobs = _load(CI)["jobs"]
    assert jobs["build"]["needs"] == "test"
    assert jobs["deploy"]["needs"] == "build"
    assert "make build" in [step.get("run") for step in _steps(jobs["build"])]
    on_main = "github.event_name == 'push' && github.ref == 'refs/heads/main'"
    assert jobs["deploy"]["if"] == on_main


def test_only_the_deploy_job_may_write() -> None:
    workflow = _load(CI)
    assert workflow["permissions"] == {"contents": "read"}
    writers = {
        name
        for name, job in workflow["jobs"].items()
        if "write" in job.get("permissions", {}).values()
    }
    assert writers == {"deploy"}
    assert workflow["jobs"]["deploy"]["permissions"] == {
        "pages": "write",
        "id-token": "write",
    }


def test_the_build_links_the_repository_and_the_pages_address() -> None:
    build = _load(CI)["jobs"]["build"]
    env = next(step["env"] for step in _steps(build) if step.get("run") == "make build")
    assert env["REPO_URL"] == "${{ github.server_url }}/${{ github.repository }}"
    assert "steps.pages.outputs.base_url" in env["SITE_URL"]


def test_a_pull_request_uploads_its_site_and_the_template_says_how_to_open_it() -> None:
    build = _load(CI)["jobs"]["build"]
    upload = next(
        step
        for step in _steps(build)
        if step.get("uses", "").startswith("actions/upload-artifact@")
    )
    assert upload["if"] == "github.event_name == 'pull_request'"
    assert upload["with"] == {"name": "site", "path": "site", "retention-days": 14}
    template = (GITHUB / "pull_request_template.md").read_text()
    assert "python -m http.server -d site" in template


def test_the_zensical_trial_may_fail() -> None:
    job = _load(CI)["jobs"]["zensical"]
    assert job["continue-on-error"] is True
    assert [step["run"] for step in _steps(job) if "run" in step] == ["make zensical"]


def test_the_three_issue_forms() -> None:
    names = {yaml.safe_load(form.read_text()).get("name") for form in ISSUE_FORMS}
    assert names >= {
        "A number looks wrong",
        "An explanation is unclear",
        "A new explanation",
    }


def test_dependabot_updates_actions_and_pip() -> None:
    config = yaml.safe_load((GITHUB / "dependabot.yml").read_text())
    ecosystems = {update["package-ecosystem"] for update in config["updates"]}
    assert ecosystems == {"github-actions", "pip"}
