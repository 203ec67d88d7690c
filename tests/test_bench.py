"""`make bench` runs every benchmark module; none is run by `make test`.

Each committed result carries its provenance and the checksum the benchmark wrote:
an accidental hand edit is refused (``mha.support.measured.load``). The checksum
detects accidents, not intent: whoever means to forge a result can recompute it.
"""

from __future__ import annotations

import ast
import importlib.util
import json
import os
import re
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from mha.support import measured
from tests.bench.__main__ import OUT, benchmarks

FOLDER = Path(__file__).parent / "bench"
ROOT = Path(__file__).resolve().parents[1]


def test_make_bench_runs_each_module_with_a_run_function():
    names = benchmarks()
    assert "__main__" not in names and "smollm2" in names and "layer" in names
    for name in names:
        tree = ast.parse((FOLDER / f"{name}.py").read_text())
        functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)}
        assert "run" in functions, f"tests/bench/{name}.py has no run()"


def test_a_result_is_written_in_the_repository_that_ran_the_bench(tmp_path: Path):
    """Not in the folder of the mha Python imports: a clone that shares this venv
    imports this clone's mha, and its bench must write in its own folder, beside
    the commit its provenance names."""
    other = tmp_path / "other-clone"
    copy = other / "tests" / "bench" / "__main__.py"
    copy.parent.mkdir(parents=True)
    copy.write_text((FOLDER / "__main__.py").read_text())
    spec = importlib.util.spec_from_file_location("other_bench_main", copy)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert other / "src" / "mha" / "data" / "bench" == module.OUT
    assert measured.DATA_DIR.resolve() == OUT  # here, the folder the pages read


def test_no_benchmark_imports_torch_at_module_level():
    """pytest never collects tests/bench, and `make bench` imports torch in run()."""
    for name in benchmarks():
        tree = ast.parse((FOLDER / f"{name}.py").read_text())
        top = [n for n in tree.body if isinstance(n, ast.Import | ast.ImportFrom)]
        modules = {a.name for n in top if isinstance(n, ast.Import) for a in n.names}
        modules |= {n.module for n in top if isinstance(n, ast.ImportFrom)}
        assert not {m for m in modules if m and m.split(".")[0] == "torch"}, name


@pytest.mark.parametrize("name", benchmarks())
def test_each_result_is_committed_with_its_provenance_and_checksum(name):
    path = OUT / f"{name}.json"
    assert path.is_file(), f"run: python -m tests.bench {name}"
    data = measured.load_sealed(name)  # refuses a missing or mismatched checksum
    assert data["checksum"] == measured.checksum(data)
    origin = data["provenance"]
    assert origin["command"] == f"python -m tests.bench {name}"
    assert len(origin["commit"]) == 40 and origin["machine"]["cpu_count"] >= 1


def test_a_hand_edited_result_is_refused(tmp_path, monkeypatch):
    """Plant the fault: one figure of a committed result retyped, the file kept."""
    data = json.loads((OUT / "layer.json").read_text())
    data["shapes"][0]["ms"]["core"]["median_ms"] *= 0.5
    (tmp_path / "layer.json").write_text(json.dumps(data, indent=2, sort_keys=True))
    monkeypatch.setattr(measured, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match=r"layer\.json does not match its checksum"):
        measured.load("layer")


def test_a_result_without_a_checksum_is_refused(tmp_path, monkeypatch):
    data = json.loads((OUT / "layer.json").read_text())
    del data["checksum"]
    (tmp_path / "layer.json").write_text(json.dumps(data))
    monkeypatch.setattr(measured, "DATA_DIR", tmp_path)
    with pytest.raises(ValueError, match="carries no checksum"):
        measured.load_sealed("layer")


def test_the_site_bench_counts_the_cpu_of_what_a_command_leaves_running():
    """A command that exits at once, leaving a child that burns CPU for a while (as
    Chromium's renderers outlive the browser tests): counted once adopted, not before.
    In a process of its own: a subreaper adopts every orphan below it."""
    script = textwrap.dedent(
        """
        import sys, time
        from pathlib import Path
        from tests import cpu_time
        from tests.bench import site

        burn = (
            "import time\\nt = time.process_time()\\n"
            "while time.process_time() - t < 0.5: pass"
        )
        spawn = f"import subprocess, sys; subprocess.Popen([sys.executable, '-c', {burn!r}])"
        leaves = [sys.executable, "-c", spawn]
        if sys.argv[1] == "adopt":
            cpu_time.become_subreaper()
        wall, cpu = site._finish(site._start(leaves, Path.cwd()), time.perf_counter())
        print(cpu)
        """
    )
    cpu = {
        mode: float(
            subprocess.run(
                [sys.executable, "-c", script, mode],
                cwd=ROOT,
                capture_output=True,
                text=True,
                check=True,
            ).stdout
        )
        for mode in ("adopt", "lose")
    }
    assert cpu["adopt"] >= 0.5 > cpu["lose"]


def test_make_test_prints_its_cpu_time_with_what_it_left_running(tmp_path):
    """The summary line of a run counts a process a test left running (an orphan
    burning 1 CPU-s, as Chromium's renderers outlive the browser tests), against the
    same run without it. The test returns once the orphan has ended. The summary rounds
    to 0.1 s, and a pytest run's own CPU time varies by as much on a busy machine (an
    orphan of 0.5 CPU-s once showed as 1.2 - 0.8 CPU-s), so the orphan burns twice
    that and the margin is 0.3 CPU-s."""
    burn = (
        "import time\nt = time.process_time()\nwhile time.process_time() - t < 1: pass"
    )
    leave = (
        "import subprocess, sys; "
        f"print(subprocess.Popen([sys.executable, '-c', {burn!r}]).pid)"
    )
    ended = "open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()[0] == 'Z'"
    cpu = {}
    for name, code in (("leaves", leave), ("waits", "print(0)")):
        test = tmp_path / f"test_{name}.py"
        test.write_text(
            "import subprocess, sys, time\n\n\ndef test_it():\n"
            f"    run = subprocess.run([sys.executable, '-c', {code!r}], "
            "capture_output=True, text=True, check=True)\n"
            "    pid = int(run.stdout)\n"
            f"    while pid and not {ended}:\n"
            "        time.sleep(0.05)\n"
        )
        options = ["-q", "-o", "addopts=", "-p", "no:cacheprovider"]
        run = subprocess.run(
            [
                sys.executable,
                "-m",
                "pytest",
                *options,
                "-p",
                "tests.cpu_time",
                str(test),
            ],
            cwd=ROOT,
            env={
                **os.environ,
                "PYTHONPATH": str(ROOT),
                "PYTEST_DISABLE_PLUGIN_AUTOLOAD": "1",
            },
            capture_output=True,
            text=True,
        )
        found = re.search(r"wall [\d.]+ s, CPU ([\d.]+) s \(user \+ sys", run.stdout)
        assert run.returncode == 0 and found, run.stdout[-2000:]
        cpu[name] = float(found[1])
    assert cpu["leaves"] - cpu["waits"] >= 0.7


def test_the_readme_gives_the_cold_build_as_the_last_bench_measured_it():
    """The README's cold-build time is the sealed one (site.json), not typed apart."""
    site = measured.load_sealed("site")
    readme = (ROOT / "README.md").read_text()
    cold = site["measured"]
    load = site["provenance"]["machine"]["load_average_1min"]
    sentence = (
        f"at load {load}) measured the cold build of a fresh clone at "
        f"{cold['cold_build_s']} s and {cold['cold_build_cpu_s']} CPU-s"
    )
    assert " ".join(sentence.split()) in " ".join(readme.split())


def test_a_result_the_run_wrote_is_not_an_uncommitted_change(tmp_path, monkeypatch):
    """Each result written made every later one of `make bench` say "uncommitted
    changes" (eight results sealed at b998843: seven said so)."""
    import tests.bench.__main__ as bench

    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", str(ROOT), str(clone)], check=True)
    monkeypatch.setattr(bench, "ROOT", clone)
    monkeypatch.setattr(bench, "OUT", clone / "src" / "mha" / "data" / "bench")
    (bench.OUT / "decode.json").write_text("{}\n")  # as the run's first result
    assert bench.provenance("layer")["uncommitted_changes"] is False
    with (clone / "src" / "mha" / "attention.py").open("a") as code:
        code.write("# an edit\n")
    assert bench.provenance("layer")["uncommitted_changes"] is True


def test_a_bench_command_that_fails_says_why(tmp_path):
    """A cold build that failed beside another said only "failed (1)": its errors went
    to /dev/null."""
    from tests.bench import site

    clone = tmp_path / "clone"
    clone.mkdir()
    failing = [sys.executable, "-c", "import sys; sys.exit('planted: why it failed')"]
    with pytest.raises(
        RuntimeError, match="failed \\(1\\); its last lines:\\nplanted: why"
    ):
        site._finish(site._start(failing, clone), time.perf_counter())
