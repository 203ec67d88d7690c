"""The repository's housekeeping: the hashed lock, the Makefile's venvs, CI's runs on
3.11, 3.12 and 3.13, pre-commit, the vendored KaTeX's record, the licences and the citation.
"""

from __future__ import annotations

import re
import subprocess
import tomllib
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parent.parent
REFERENCE_ONLY = {"torch", "transformers", "accelerate"}


def _pins(lock: Path) -> dict[str, str]:
    """``name: version`` of each requirement of a pip-compile output."""
    pins = re.findall(r"^([A-Za-z0-9_.-]+)==(\S+)", lock.read_text(), re.M)
    return {name.lower(): version for name, version in pins}


def _make_dry_run(*arguments: str) -> str:
    result = subprocess.run(
        ["make", "--dry-run", "--always-make", *arguments],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    )
    return result.stdout


def test_the_lock_pins_every_package_with_its_hashes():
    lock = ROOT / "requirements.lock"
    blocks = re.split(r"\n(?=[A-Za-z0-9])", lock.read_text())
    entries = [block for block in blocks if re.match(r"[A-Za-z0-9_.-]+==", block)]
    assert len(entries) == len(_pins(lock)) > 50
    assert all("--hash=sha256:" in entry for entry in entries)
    assert "pip-compile" in lock.read_text() and "--generate-hashes" in lock.read_text()


def test_the_site_lock_holds_no_reference_library_and_no_regex():
    site = _pins(ROOT / "requirements.lock")
    assert not REFERENCE_ONLY & set(site)
    assert "regex" not in site
    reference = _pins(ROOT / "requirements-reference.txt")
    assert set(reference) >= REFERENCE_ONLY
    assert reference["torch"].startswith("2.13.0")
    shared = set(site) & set(reference)
    assert all(site[name] == reference[name] for name in shared)


def test_the_site_lock_holds_what_lays_out_the_api_signatures():
    """mkdocstrings lays out a long signature with Black or Ruff when either is
    installed: the site's own lock holds one, or `make build` would publish another API
    reference than the one the tests' build (whose toolchain has Ruff) checks."""
    assert {"ruff", "black"} & set(_pins(ROOT / "requirements.lock"))


def test_python_311_to_313_are_supported():
    """Both locks resolve for 3.13 (every pin has a 3.13 wheel: measured with
    ``pip install --dry-run --python-version 3.13 --only-binary=:all: --require-hashes``)."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    assert project["requires-python"] == ">=3.11,<3.14"


def test_make_installs_the_lock_with_hashes_in_the_venv_it_is_given():
    commands = _make_dry_run("test", "VENV=.venv-other", "PYTHON=python-other")
    assert "python-other -m venv .venv-other" in commands
    assert "-m pip install --quiet --require-hashes -r requirements.lock" in commands
    assert "-m pip install --quiet --no-deps -e ." in commands
    assert ".venv-other/bin/pytest" in commands


def test_make_bench_takes_torch_from_the_cpu_index_when_no_wheel_is_local():
    commands = _make_dry_run("bench").replace("\\\n", " ")
    local = "--no-index --no-deps torch==2.13.0"
    cpu_index = "--index-url https://download.pytorch.org/whl/cpu torch==2.13.0"
    pattern = rf"{re.escape(local)}\s+\|\|\s.*{re.escape(cpu_index)}"
    assert re.search(pattern, commands), commands


def test_ci_runs_the_plain_make_test_on_311_to_313_then_the_reference_tests():
    run = (ROOT / ".ci" / "run").read_text()
    assert 'versions="${CI_PYTHONS:-3.11 3.12 3.13}"' in run
    assert 'make test PYTHON="$python" VENV="$venv"' in run
    assert "skipped, no python$version found" in run
    assert run.index("make test PYTHON") < run.index("pytest -m reference")


def test_pre_commit_runs_ruff_and_the_drift_guard():
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = {hook["id"]: hook for repo in config["repos"] for hook in repo["hooks"]}
    assert set(hooks) == {"ruff-check", "ruff-format", "drift-guard"}
    drift = hooks["drift-guard"]["entry"].split()
    assert (ROOT / drift[-1]).is_file() and drift[0].endswith("pytest")


def test_katex_version_and_source_are_recorded_beside_it():
    katex = ROOT / "docs" / "assets" / "katex"
    version = re.search(r'version:"([0-9.]+)"', (katex / "katex.min.js").read_text())
    record = (katex / "SOURCE.txt").read_text()
    assert version and f"KaTeX {version[1]}" in record
    assert f"katex@{version[1]}" in record
    assert (katex / "LICENSE").is_file()


def _reuse_pattern(glob: str) -> re.Pattern[str]:
    """A REUSE.toml path glob as a regex: ``**`` crosses folders, ``*`` does not."""
    parts = re.split(r"(\*\*|\*)", glob)
    translated = {"**": ".*", "*": "[^/]*"}
    return re.compile("".join(translated.get(p, re.escape(p)) for p in parts))


def test_every_tracked_file_has_a_licence_in_reuse_toml():
    annotations = tomllib.loads((ROOT / "REUSE.toml").read_text())["annotations"]
    patterns = []
    for annotation in annotations:
        paths = annotation["path"]
        for path in [paths] if isinstance(paths, str) else paths:
            patterns.append(_reuse_pattern(path))
    tracked = subprocess.run(
        ["git", "ls-files"], cwd=ROOT, capture_output=True, text=True, check=True
    ).stdout.split()
    licensed = ("LICENSES/",)  # the licence texts themselves
    missing = [
        path
        for path in tracked
        if not path.startswith(licensed)
        and not any(p.fullmatch(path) for p in patterns)
    ]
    assert not missing, missing
    used = {a["SPDX-License-Identifier"] for a in annotations}
    assert {"MIT", "CC-BY-4.0"} <= set(" ".join(used).replace(" AND ", " ").split())
    for licence in ("MIT", "CC-BY-4.0"):
        assert (ROOT / "LICENSES" / f"{licence}.txt").is_file()
    assert "REUSE.toml" in (ROOT / "README.md").read_text()


def test_the_citation_file():
    citation = yaml.safe_load((ROOT / "CITATION.cff").read_text())
    assert citation["cff-version"] == "1.2.0"
    assert citation["title"] == "Multi-Head Attention, Computed"
    assert citation["license"] == ["MIT", "CC-BY-4.0"]
