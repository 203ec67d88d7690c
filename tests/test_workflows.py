"""The GitHub Actions workflows: valid, audited, and held to the repository's policy.

Both tools run offline from .venv: check-jsonschema validates each workflow against
its bundled GitHub schema, zizmor audits .github/ for security (pedantic persona, so
even undocumented permissions are findings). Any finding fails; a finding that cannot
be fixed would be explained in .github/zizmor.yml.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parent.parent
GITHUB = ROOT / ".github"
WORKFLOWS = sorted((GITHUB / "workflows").glob("*.yml"))
BIN = Path(sys.executable).parent

# The release commits every action is pinned to (see DESIGN.md), by action.
PINS = {
    "actions/checkout": ("3d3c42e5aac5ba805825da76410c181273ba90b1", "v7.0.1"),
    "actions/setup-python": ("5fda3b95a4ea91299a34e894583c3862153e4b97", "v7.0.0"),
    "actions/configure-pages": ("983d7736d9b0ae728b81ab479565c72886d7745b", "v5.0.0"),
    "actions/upload-pages-artifact": (
        "fc324d3547104276b827a68afc52ff2a11cc49c9",
        "v5.0.0",
    ),
    "actions/deploy-pages": ("cd2ce8fcbc39b97be8ca5fce6e763baed58fa128", "v5.0.0"),
}
USES = re.compile(
    r"uses:\s*(?P<action>[^@\s]+)@(?P<ref>\S+)(?:\s*#\s*(?P<version>\S+))?"
)


def _load(path: Path) -> dict:
    workflow = yaml.safe_load(path.read_text())
    workflow["on"] = workflow.pop(
        True, workflow.get("on")
    )  # YAML 1.1 reads `on` as True
    return workflow


def _steps(workflow: dict) -> list[dict]:
    return [step for job in workflow["jobs"].values() for step in job.get("steps", [])]


def test_there_are_a_test_and_a_deploy_workflow() -> None:
    assert [path.name for path in WORKFLOWS] == ["deploy.yml", "test.yml"]


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda path: path.name)
def test_workflow_matches_githubs_schema(path: Path) -> None:
    result = subprocess.run(
        [BIN / "check-jsonschema", "--builtin-schema", "vendor.github-workflows", path],
        capture_output=True,
        text=True,
    )
    assert result.returncode == 0, result.stdout + result.stderr


def test_zizmor_finds_nothing() -> None:
    result = subprocess.run(
        [BIN / "zizmor", "--offline", "--pedantic", "--strict-collection", GITHUB],
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    assert result.returncode == 0, result.stdout + result.stderr


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda path: path.name)
def test_actions_are_pinned_to_the_listed_release_commits(path: Path) -> None:
    uses = list(USES.finditer(path.read_text()))
    assert uses
    for use in uses:
        assert use["action"] in PINS, (
            f"{use['action']} is not one of the pinned actions"
        )
        assert (use["ref"], use["version"]) == PINS[use["action"]], use.group(0)


@pytest.mark.parametrize("path", WORKFLOWS, ids=lambda path: path.name)
def test_checkout_keeps_no_credentials_and_no_trigger_runs_untrusted_code(
    path: Path,
) -> None:
    workflow = _load(path)
    assert "pull_request_target" not in workflow["on"]
    checkouts = [
        s for s in _steps(workflow) if s.get("uses", "").startswith("actions/checkout@")
    ]
    assert checkouts
    assert all(step["with"]["persist-credentials"] is False for step in checkouts)


def test_tests_run_on_pushes_and_pull_requests_with_read_only_permissions() -> None:
    workflow = _load(GITHUB / "workflows" / "test.yml")
    assert set(workflow["on"]) == {"push", "pull_request"}
    assert workflow["permissions"] == {"contents": "read"}
    assert all("permissions" not in job for job in workflow["jobs"].values())
    assert [step["run"] for step in _steps(workflow) if "run" in step] == [
        "bash .ci/run"
    ]


def test_deploy_runs_from_main_and_only_its_deploy_job_may_write() -> None:
    workflow = _load(GITHUB / "workflows" / "deploy.yml")
    assert workflow["on"] == {"push": {"branches": ["main"]}}
    assert workflow["permissions"] == {}
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
    assert "make build" in [step.get("run") for step in _steps(workflow)]
