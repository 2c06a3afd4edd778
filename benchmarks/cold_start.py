"""Benchmark: cold start: each Lambda entry point's import, the first transition of a fresh process, the layer's size.

(a) **Import.** Each handler module of ``template.yaml`` (``phases``, ``scheduler.app``, ``api.app``) is
imported in fresh processes, timed inside the process around the ``import`` statement (what
``python -X importtime`` reports as the module's cumulative time, without its overhead), round-robin
with ``import boto3`` alone and with each entry point's dependency floor (:func:`floor_code`: boto3,
pydantic's ``BaseModel`` and ``Field``, the Powertools logger and metrics made as cairn makes them, its
tracer where tracing is on, and for the API Powertools' HTTP API resolver and its OpenAPI parameters),
and given as a ratio to each. The target is against the floor. The environment is a Lambda function's:
``LAMBDA_TASK_ROOT`` set, with tracing on (``Tracing: Active``, as the template deploys) and with
``POWERTOOLS_TRACE_DISABLED=true`` (as ``cairn dev``'s workers run); ``outside Lambda`` (tests, scripts) is
the third. The full run installs the layer's pinned requirements for this machine with the Lambda
runtime's Python (the template's ``Globals: Function: Runtime``) and runs with only them, the cairn package
and ``functions/`` on the path (``python -S``); ``--quick`` uses this interpreter and its virtualenv.
``before`` is the same code at the revision ``--baseline`` names (exported with ``git archive``), measured in
the same run.
Without a bytecode cache (as a SAM-built layer runs: no ``.pyc`` in it, ``/opt`` read-only) is measured
too. The heaviest imports of ``phases`` come from ``-X importtime``.

(b) **First transition.** A fresh process (this virtualenv: moto is needed) imports ``phases`` as a
Lambda function's init does, then sets up moto (a table, a started job: not counted), then runs the
first event (``fetch`` of document-intake: claim, run, commit) through the handler, then a second job's
``fetch`` warm. From process start to the first commit, moto's setup left out, as a ratio to a fresh
process that imports boto3.

(c) **Layer size.** The cairn package without its local tools (``cairn.bundle.layer.prune``, as
``sam build`` leaves them out), ``pip install --no-compile -r layers/requirements.txt -t python/`` for
the template's architecture and runtime (arm64, binary wheels: what
``sam build`` unpacks), then its bytes unzipped and zipped (deflate), and by distribution.

Run: ``python -m benchmarks.cold_start`` (``--quick``: fewer runs, this interpreter, no layer build).
"""

from __future__ import annotations

import argparse
import functools
import io
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from benchmarks import common
from benchmarks.common import Result, Summary, Table, Target
from cairn.bundle import layer, python_runtime
from cairn.bundle.templating import cfnyaml
from cairn.dev.runtimes import RuntimeNotFound, interpreter_for

ROOT = Path(__file__).resolve().parents[1]
SUITE = "cold_start"
BASELINE = "38f83fe"
"""The code before issue 15's cold-start changes (the X-Ray tracer and FileStorage imported eagerly)."""
RUNTIME = str(python_runtime.chosen(cfnyaml.load((ROOT / "template.yaml").read_text(encoding="utf-8"))))
"""The template's runtime (``Globals: Function: Runtime``): the layer is built and its imports timed for it."""
RUNTIME_PYTHON = python_runtime.version(RUNTIME)
ARCHITECTURE = "arm64"


def compile_as_shipped(python: str) -> list[str]:
    """The compileall command line layers/Makefile's finish step amounts to (cairn.bundle.layer.compile_bytecode)."""
    return [python, "-m", "compileall", "-q", "--invalidation-mode", "unchecked-hash", "-j", "1"]


PLATFORM_TAGS = {"arm64": "manylinux2014_aarch64", "aarch64": "manylinux2014_aarch64", "x86_64": "manylinux2014_x86_64"}
#: An entry point's import, at most this many times its dependency floor's.
IMPORT_TARGET = 1.3
#: The name a dependency floor is measured under, beside the entry points' modules.
DEPENDENCY_FLOOR = "the dependency floor"
LAYER_TARGET_MB = 34.0
AWS_SDK = ("boto3", "botocore", "s3transfer", "jmespath", "urllib3", "python_dateutil", "six")
"""The distributions the Lambda Python runtime already has (boto3 and what it needs)."""
OWNER = "arn:aws:iam::123456789012:user/bench"

#: The environment of a Lambda function of the template (no trace header: Lambda sets it per invocation).
LAMBDA_ENVIRONMENT = {
    "AWS_LAMBDA_FUNCTION_NAME": "cairn-document-intake-fetch",
    "AWS_LAMBDA_FUNCTION_MEMORY_SIZE": "512",
    "AWS_EXECUTION_ENV": f"AWS_Lambda_{RUNTIME}",
    "AWS_XRAY_DAEMON_ADDRESS": "127.0.0.1:2000",
    "AWS_XRAY_CONTEXT_MISSING": "LOG_ERROR",
    "POWERTOOLS_SERVICE_NAME": "cairn",
    "POWERTOOLS_METRICS_NAMESPACE": "cairn",
    "CAIRN_PIPELINE": "document-intake",
    "CAIRN_PHASE": "fetch",
}
ENVIRONMENTS = ("Lambda, tracing on", "Lambda, tracing off", "outside Lambda")
TRACE_HEADER = "Root=1-5759e988-bd862e3fe1be46a994272793;Parent=53995c3f42cd8ad8;Sampled=1"

IMPORT_CODE = "import time\nstarted = time.perf_counter()\nimport {module}\nprint(time.perf_counter() - started)\n"

#: What every entry point imports that is not cairn's: boto3, pydantic (any model with a field loads ``Field``'s
#: modules), the Powertools logger and metrics (made as cairn.aws.observability makes them), and, where tracing is
#: on, the tracer (which patches the AWS SDK).
FLOOR_CODE = """import time
started = time.perf_counter()
import os
import boto3
from pydantic import BaseModel, Field
from aws_lambda_powertools import Logger, Metrics
Logger(service="cairn")
Metrics(namespace="cairn")
if os.environ.get("LAMBDA_TASK_ROOT") and os.environ.get("POWERTOOLS_TRACE_DISABLED", "false") != "true":
    from aws_lambda_powertools import Tracer
    Tracer(service="cairn")
{extra}print(time.perf_counter() - started)
"""

#: What an entry point imports from its dependencies beyond :data:`FLOOR_CODE`'s, by module.
FLOOR_EXTRAS = {
    "api.app": (
        "from aws_lambda_powertools.event_handler import APIGatewayHttpResolver\n"
        "from aws_lambda_powertools.event_handler.openapi.params import Body, Path, Query\n"
    ),
}


def floor_of(module: str) -> str:
    """The name of the dependency floor ``module`` is measured against."""
    return f"{DEPENDENCY_FLOOR} of {module}" if module in FLOOR_EXTRAS else DEPENDENCY_FLOOR


def floor_code(floor: str) -> str:
    """The code of the dependency floor named ``floor``."""
    module = floor.removeprefix(f"{DEPENDENCY_FLOOR} of ")
    return FLOOR_CODE.format(extra=FLOOR_EXTRAS.get(module, ""))


#: The fresh process of (b): BENCH_SPAWNED is the parent's time.monotonic() just before it started this one.
FIRST_TRANSITION_CODE = """
import time
main_at = time.monotonic()
import json, os
traced = os.environ.get("BENCH_TRACE_HEADER")
import phases
imported_at = time.monotonic()

import boto3
from moto import mock_aws
from cairn import InlineScheduler, run_pipeline
from cairn.aws.dynamodb import DynamoDBStorage
from cairn.aws.dynamodb.schema import create_table
from cairn.testing.invoker import LocalContext
from pipelines import PIPELINES

mock = mock_aws()
mock.start()
client = boto3.session.Session(region_name="us-east-1").client("dynamodb")  # its own session: no warm caches
create_table(client, os.environ["CAIRN_TABLE_NAME"])
storage = DynamoDBStorage(os.environ["CAIRN_TABLE_NAME"], client=client).for_owner("{owner}")
pipeline = PIPELINES.get("document-intake")


def job(job_id):
    state = {{"text": "Total: 10 EUR"}}
    run_pipeline(job_id, pipeline, storage=storage, scheduler=InlineScheduler(), initial_state=state)
    sequence = storage.get_job(job_id).sequence
    return {{"jobId": job_id, "owner": "{owner}", "pipeline": pipeline.name, "phase": "fetch",
            "sequence": sequence}}


def invoke(event):
    if traced:
        os.environ["_X_AMZN_TRACE_ID"] = traced  # as Lambda sets it for each invocation
    began = time.monotonic()
    answer = phases.handler(event, LocalContext("cairn-document-intake-fetch"))
    took = time.monotonic() - began
    os.environ.pop("_X_AMZN_TRACE_ID", None)
    if answer.get("status") != "running" or (answer.get("scheduled") or {{}}).get("phase") != "split":
        raise SystemExit(f"unexpected answer: {{answer}}")
    return took


first_event = job("job-first")
first = invoke(first_event)
second = invoke(job("job-warm"))
committed = storage.get_job("job-first")
assert [record.phase for record in committed.phases] == ["fetch"], committed.phases
spawned = float(os.environ["BENCH_SPAWNED"])
print("BENCH " + json.dumps({{
    "startup": main_at - spawned, "import": imported_at - main_at, "first": first, "warm": second,
}}))
"""

BOTO3_FROM_SPAWN_CODE = (
    "import time\nmain_at = time.monotonic()\nimport json, os\nimport boto3\ndone = time.monotonic()\n"
    'print("BENCH " + json.dumps({"startup": main_at - float(os.environ["BENCH_SPAWNED"]), '
    '"import": done - main_at}))\n'
)


def say(message: str) -> None:
    """Progress on stderr."""
    print(f"[{SUITE}] {message}", file=sys.stderr, flush=True)


# -- what runs where -------------------------------------------------------------------------


@dataclass(frozen=True)
class Code:
    """A version of the code: its label, the cairn package's parent folder and ``functions/``."""

    label: str
    cairn: Path
    functions: Path


@dataclass(frozen=True)
class Interpreter:
    """A Python and the folders (after the code's) that hold the layer's requirements."""

    python: str
    flags: tuple[str, ...]
    requirements: tuple[Path, ...]
    description: str

    def environment(self, code: Code, where: str, extra: Mapping[str, str] | None = None) -> dict[str, str]:
        """A clean environment for a fresh process of ``code`` in ``where`` (one of ENVIRONMENTS)."""
        paths = [code.functions, code.cairn, *self.requirements]
        env = {
            "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
            "LANG": "C.UTF-8",
            "HOME": os.environ.get("HOME", "/tmp"),
            "PYTHONPATH": os.pathsep.join(str(path) for path in paths),
            "AWS_REGION": "us-east-1",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
        }
        if where != "outside Lambda":
            env.update(LAMBDA_ENVIRONMENT, LAMBDA_TASK_ROOT=str(code.functions))
        if where == "Lambda, tracing off":
            env["POWERTOOLS_TRACE_DISABLED"] = "true"
        env.update(extra or {})
        return env

    def run(self, code_text: str, env: Mapping[str, str], *extra_flags: str) -> subprocess.CompletedProcess[str]:
        """Run ``code_text`` in a fresh process; fails loudly when it fails."""
        command = [self.python, *self.flags, *extra_flags, "-c", code_text]
        done = subprocess.run(command, env=dict(env), capture_output=True, text=True, timeout=300, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"{' '.join(command[:-1])} failed:\n{done.stderr[-2000:]}")
        return done


def handler_modules(template: Path) -> list[str]:
    """The modules of the template's handlers, the most used first: ``phases`` (every phase function), then the rest."""
    handlers = re.findall(r"^\s*Handler:\s*([\w.]+)\s*$", template.read_text(), flags=re.MULTILINE)
    counted = Counter(handler.rsplit(".", 1)[0] for handler in handlers)
    return [module for module, _ in counted.most_common()]


def export_revision(revision: str, into: Path) -> Code | None:
    """``layers/cairn`` and ``functions`` as they were at ``revision`` (``git archive``); None if git cannot."""
    try:
        archive = subprocess.run(
            ["git", "archive", "--format=tar", revision, "layers/cairn", "functions"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        ).stdout
    except (OSError, subprocess.CalledProcessError):
        return None
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(fileobj=io.BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return Code(f"before ({revision})", into / "layers" / "cairn", into / "functions")


def runtime_python() -> str | None:
    """The Lambda runtime's Python (the template's) on this machine, found as cairn dev finds it, if there is one."""
    try:
        return interpreter_for(f"python{RUNTIME_PYTHON}")
    except RuntimeNotFound:
        return None


def pip_install(target: Path, platform_tag: str | None) -> str:
    """Install the layer's requirements into ``target`` as ``sam build`` does (binary wheels, no .pyc); pip's error."""
    command = [
        sys.executable,
        "-m",
        "pip",
        "install",
        "--quiet",
        "--disable-pip-version-check",
        "--no-compile",
        "-r",
        str(ROOT / "layers" / "requirements.txt"),
        "-t",
        str(target),
    ]
    if platform_tag:
        command += ["--platform", platform_tag, "--only-binary=:all:"]
        command += ["--python-version", RUNTIME_PYTHON, "--implementation", "cp"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=600, check=False)
    return "" if done.returncode == 0 else (done.stderr.strip().splitlines() or ["pip failed"])[-1]


def local_platform_tag() -> str | None:
    """This machine's manylinux tag for pip (None: not Linux on a known architecture)."""
    if sys.platform != "linux":
        return None
    return PLATFORM_TAGS.get(platform.machine())


# -- (a) import ------------------------------------------------------------------------------


def import_seconds(interpreter: Interpreter, module: str, env: Mapping[str, str]) -> float:
    """Seconds ``import module`` (or the dependency floor's imports) took in a fresh process."""
    code = floor_code(module) if module.startswith(DEPENDENCY_FLOOR) else IMPORT_CODE.format(module=module)
    return float(interpreter.run(code, env).stdout.strip().splitlines()[-1])


@dataclass(frozen=True)
class ImportVariant:
    """One measured import: which module, which code, where."""

    module: str
    code: Code
    where: str

    @property
    def key(self) -> str:
        return f"{self.module} | {self.code.label} | {self.where}"


def measure_imports(
    interpreter: Interpreter, variants: Sequence[ImportVariant], repeats: int, extra: Mapping[str, str] | None = None
) -> dict[str, Summary]:
    """Each variant ``repeats`` times, interleaved, after one unmeasured run each (bytecode written)."""
    measures: dict[str, Callable[[], float]] = {}
    for variant in variants:
        env = interpreter.environment(variant.code, variant.where, extra)
        measures[variant.key] = functools.partial(import_seconds, interpreter, variant.module, env)
    if not extra:
        for measure in measures.values():
            measure()
    return common.interleaved(measures, repeats)


def importtime_profile(interpreter: Interpreter, code: Code, module: str, runs: int) -> dict[str, tuple[float, float]]:
    """Each module's median self and cumulative microseconds from ``python -X importtime -c 'import module'``."""
    selves: dict[str, list[float]] = {}
    cumulative: dict[str, list[float]] = {}
    env = interpreter.environment(code, "Lambda, tracing on")
    for _ in range(runs):
        stderr = interpreter.run(f"import {module}", env, "-X", "importtime").stderr
        for line in stderr.splitlines():
            if not line.startswith("import time:") or "imported package" in line:
                continue
            own, total, name = line[len("import time:") :].split("|", 2)
            selves.setdefault(name.strip(), []).append(float(own))
            cumulative.setdefault(name.strip(), []).append(float(total))
    return {name: (statistics.median(selves[name]), statistics.median(cumulative[name])) for name in selves}


# -- (b) first transition ----------------------------------------------------------------------


def from_spawn(interpreter: Interpreter, code_text: str, env: Mapping[str, str]) -> dict[str, float]:
    """Run ``code_text`` in a fresh process told when it was spawned; the figures it printed (``BENCH {...}``)."""
    spawned = time.monotonic()
    done = interpreter.run(code_text, {**env, "BENCH_SPAWNED": repr(spawned)})
    for line in reversed(done.stdout.splitlines()):
        if line.startswith("BENCH "):
            figures: dict[str, float] = json.loads(line[len("BENCH ") :])
            return figures
    raise RuntimeError(f"no figures in the output: {done.stdout[-1000:]}")


def measure_first_transitions(
    interpreter: Interpreter, codes: Sequence[Code], environments: Sequence[str], repeats: int
) -> dict[str, dict[str, Summary]]:
    """The fresh-process first transition of each code and environment, and ``import boto3`` from spawn."""
    scripts = {"boto3": BOTO3_FROM_SPAWN_CODE, "transition": FIRST_TRANSITION_CODE.format(owner=OWNER)}
    collected: dict[str, list[dict[str, float]]] = {}
    measures: dict[str, Callable[[], float]] = {}

    def add(key: str, script: str, env: Mapping[str, str]) -> None:
        collected[key] = []

        def measure() -> float:
            figures = from_spawn(interpreter, script, env)
            collected[key].append(figures)
            return sum(value for name, value in figures.items() if name != "warm")

        measures[key] = measure

    for where in environments:
        add(f"import boto3 | {where}", scripts["boto3"], interpreter.environment(codes[-1], where))
        for code in codes:
            extra = {"CAIRN_TABLE_NAME": "cairn-bench", "CAIRN_DRIVER": "stepfunctions"}
            extra["CAIRN_STATE_MACHINE_ARN"] = "arn:aws:states:us-east-1:123456789012:stateMachine:cairn-pipeline"
            if where == "Lambda, tracing on":
                extra["BENCH_TRACE_HEADER"] = TRACE_HEADER
            add(f"{code.label} | {where}", scripts["transition"], interpreter.environment(code, where, extra))
    common.interleaved(measures, repeats)
    return {
        key: {name: Summary.of([figures[name] for figures in runs]) for name in runs[0]}
        for key, runs in collected.items()
    }


# -- (c) the layer -----------------------------------------------------------------------------


@dataclass
class Layer:
    """A built layer: where, for which platform, its bytes unzipped and zipped, and by distribution."""

    folder: Path
    platform_tag: str
    unzipped: int
    zipped: int
    by_distribution: dict[str, int]
    without_sdk_unzipped: int
    without_sdk_zipped: int


def stage_package(site: Path) -> None:
    """The cairn package as the layer holds it, in ``site``: the source without its local tools (no bytecode)."""
    shutil.copytree(ROOT / "layers" / "cairn" / "cairn", site / "cairn", ignore=shutil.ignore_patterns("__pycache__"))
    layer.prune(site)


def build_layer(folder: Path, platform_tag: str | None) -> str:
    """Stage the layer into ``folder/python`` and install its requirements there; pip's error, or ""."""
    stage_package(folder / "python")
    return pip_install(folder / "python", platform_tag)


def distributions(python: Path) -> dict[str, set[Path]]:
    """Each installed distribution's files (from its RECORD); the cairn package and the rest under "cairn"."""
    owned: dict[str, set[Path]] = {}
    for record in python.glob("*.dist-info/RECORD"):
        name = record.parent.name.split("-")[0].lower().replace("-", "_").replace(".", "_")
        files = set()
        for row in record.read_text().splitlines():
            path = (python / row.split(",")[0]).resolve()
            if path.is_file():
                files.add(path)
        owned[name] = files
    owner_of = {path: name for name, files in owned.items() for path in files}
    for compiled in python.rglob("__pycache__/*.pyc"):  # bytecode belongs with its source's distribution
        source = (compiled.parent.parent / f"{compiled.name.split('.')[0]}.py").resolve()
        if source in owner_of:
            owned[owner_of[source]].add(compiled.resolve())
    claimed = set().union(*owned.values()) if owned else set()
    owned["cairn (the library)"] = {path.resolve() for path in python.rglob("*") if path.is_file()} - claimed
    return owned


def zipped_size(folder: Path, files: Sequence[Path]) -> int:
    """Bytes of a deflate zip of ``files`` (paths kept under ``folder``'s name, as the layer's ``python/``)."""
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for path in sorted(files):
            archive.write(path, Path(folder.name) / path.relative_to(folder))
    return len(buffer.getvalue())


def measure_layer(folder: Path, platform_tag: str) -> Layer:
    """The sizes of the layer built in ``folder``."""
    python = (folder / "python").resolve()
    owned = distributions(python)
    every = sorted({path for files in owned.values() for path in files})
    without = sorted({path for name, files in owned.items() if name not in AWS_SDK for path in files})
    return Layer(
        folder=folder,
        platform_tag=platform_tag,
        unzipped=sum(path.stat().st_size for path in every),
        zipped=zipped_size(python, every),
        by_distribution={name: sum(path.stat().st_size for path in files) for name, files in owned.items()},
        without_sdk_unzipped=sum(path.stat().st_size for path in without),
        without_sdk_zipped=zipped_size(python, without),
    )


# -- the report --------------------------------------------------------------------------------


def mb(size: float) -> str:
    """Bytes as megabytes (10^6), two decimals."""
    return f"{size / 1e6:.2f}"


def ratio(summary: Summary | None, reference: Summary | None) -> str:
    """``summary``'s median over ``reference``'s, as ``2.05x``."""
    if summary is None or reference is None:
        return "-"
    return f"{summary.median / reference.median:.2f}x"


def ms_cell(summary: Summary | None) -> str:
    """Milliseconds, ``median (min-max)``."""
    return "-" if summary is None else summary.scaled(1000).cell(0)


def common_load_note(load_before: float) -> str:
    """The machine's load (1-minute average) when the suite began and ended: other work skews fresh-process timings."""
    return (
        f"Load average (1 min) {load_before:.1f} at the start and {os.getloadavg()[0]:.1f} at the end, on "
        f"{os.cpu_count()} CPUs: fresh processes are timed on a shared machine, so the min-max spread matters."
    )


def asdict_ms(summary: Summary) -> dict[str, float]:
    """A summary in milliseconds, as plain numbers."""
    scaled = summary.scaled(1000)
    return {"median": scaled.median, "min": scaled.min, "max": scaled.max, "runs": scaled.runs}


@dataclass
class Setup:
    """What a run measures with: the code versions (``before`` first), the interpreters, the modules, its scratch."""

    codes: list[Code]
    interpreter: Interpreter
    venv: Interpreter
    modules: list[str]
    scratch: Path
    quick: bool
    repeats: int

    @property
    def now(self) -> Code:
        return self.codes[-1]


def prepare(result: Result, scratch: Path, *, quick: bool, repeats: int, baseline: str) -> Setup:
    """The code versions and the interpreter of the imports (the layer's requirements on the runtime's Python if
    possible)."""
    now = Code("now", ROOT / "layers" / "cairn", ROOT / "functions")
    codes = [now]
    if baseline:
        before = export_revision(baseline, scratch / "before")
        if before is None:
            result.notes.append(f"The baseline {baseline} could not be exported (git archive): no 'before'.")
        else:
            codes = [before, now]
    venv = Interpreter(sys.executable, (), (), f"this interpreter (Python {platform.python_version()}, its venv)")
    interpreter = venv
    runtime_interpreter = None if quick else runtime_python()
    if runtime_interpreter:
        say(f"installing the layer's requirements for Python {RUNTIME_PYTHON} on this machine")
        deps = scratch / "requirements"
        error = pip_install(deps, local_platform_tag())
        if error:
            result.notes.append(f"pip could not install the requirements for {runtime_interpreter}: {error}")
        else:
            interpreter = Interpreter(
                runtime_interpreter,
                ("-S",),
                (deps,),
                f"Python {RUNTIME_PYTHON} (the Lambda runtime's) with only the layer's pinned requirements "
                f"({local_platform_tag()}), the cairn package and functions/ on the path",
            )
    elif not quick:
        result.notes.append(f"No Python {RUNTIME_PYTHON} here: the imports ran on {venv.description}.")
    if interpreter is venv:
        result.notes.append(
            "The imports ran in this virtualenv: with tracing on, Powertools patches every library X-Ray "
            "supports that is installed (the test tools bring some), which the layer alone does not have."
        )
    modules = handler_modules(ROOT / "template.yaml")
    return Setup(codes, interpreter, venv, modules, scratch, quick, repeats)


def import_section(setup: Setup, result: Result) -> None:
    """(a): every entry point's import against boto3's, before and now, in each environment; the targets."""
    environments = ENVIRONMENTS if not setup.quick else ENVIRONMENTS[:1]
    now = setup.now
    variants: list[ImportVariant] = []
    for where in environments:
        variants.append(ImportVariant("boto3", now, where))
        entry_modules = setup.modules if where != "outside Lambda" else setup.modules[:1]
        variants += [ImportVariant(name, now, where) for name in dict.fromkeys(map(floor_of, entry_modules))]
        variants += [ImportVariant(module, code, where) for module in entry_modules for code in setup.codes]
    if not setup.quick:
        variants += [ImportVariant("aws_xray_sdk.core", now, where) for where in environments]
    say(f"(a) {len(variants)} imports x {setup.repeats} fresh processes on {setup.interpreter.description}")
    imports = measure_imports(setup.interpreter, variants, setup.repeats)
    rows: list[list[str]] = []
    for where in environments:
        boto3 = imports[ImportVariant("boto3", now, where).key]
        base = imports[ImportVariant(DEPENDENCY_FLOOR, now, where).key]
        rows.append(["import boto3", where, "", "", ms_cell(boto3), "1.00x", ratio(boto3, base)])
        for module in setup.modules if where != "outside Lambda" else setup.modules[:1]:
            own_floor = imports[ImportVariant(floor_of(module), now, where).key]
            if floor_of(module) != DEPENDENCY_FLOOR or module == setup.modules[0]:
                rows.append([floor_of(module), where, "", "", ms_cell(own_floor), ratio(own_floor, boto3), "1.00x"])
            before = imports.get(ImportVariant(module, setup.codes[0], where).key) if len(setup.codes) > 1 else None
            current = imports[ImportVariant(module, now, where).key]
            rows.append(
                [
                    f"import {module}",
                    where,
                    ms_cell(before),
                    ratio(before, boto3),
                    ms_cell(current),
                    ratio(current, boto3),
                    ratio(current, own_floor),
                ]
            )
        xray = imports.get(ImportVariant("aws_xray_sdk.core", now, where).key)
        if xray is not None:
            rows.append(["import aws_xray_sdk.core (alone)", where, "", "", ms_cell(xray), ratio(xray, boto3), ""])
    before_label = setup.codes[0].label if len(setup.codes) > 1 else "before"
    result.tables.append(
        Table(
            "Import time of the Lambda entry points (fresh processes)",
            ["import", "environment", f"ms {before_label}", "x boto3", "ms now", "x boto3 now", "x floor now"],
            rows,
            f"Median (min-max) of {setup.repeats} fresh processes each, interleaved; timed inside the process around "
            f"the import. Interpreter: {setup.interpreter.description}. 'Lambda': LAMBDA_TASK_ROOT and the template's "
            "environment; tracing off: POWERTOOLS_TRACE_DISABLED=true (as cairn dev's workers); outside Lambda: "
            "neither (tests, scripts). The dependency floor: import boto3, pydantic's BaseModel and Field and the "
            "Powertools Logger and Metrics (made as cairn makes them), and make its Tracer where tracing is on; "
            "the API's adds Powertools' HTTP API resolver and its OpenAPI parameters. x floor: over the entry "
            "point's own floor. "
            "aws_xray_sdk.core alone: a fresh process importing only it (much of what "
            "it imports, botocore's modules, boto3 imports too); outside Lambda its sampler also makes two botocore "
            "clients.",
        )
    )
    result.data["imports_ms"] = {key: asdict_ms(summary) for key, summary in imports.items()}
    for where in environments[:2]:
        floors: dict[str, Summary] = {
            module: imports[ImportVariant(floor_of(module), now, where).key] for module in setup.modules
        }
        ratios = {
            module: imports[ImportVariant(module, now, where).key].median / floors[module].median
            for module in setup.modules
        }
        worst = max(ratios.values())
        worst_floor = floors[max(ratios, key=lambda module: ratios[module])]
        over = worst - IMPORT_TARGET
        result.targets.append(
            Target(
                f"Import of each entry point ({where})",
                f"at most {IMPORT_TARGET}x its dependency floor",
                ", ".join(f"{module} {value:.2f}x" for module, value in ratios.items()),
                worst <= IMPORT_TARGET,
                ""
                if worst <= IMPORT_TARGET
                else f"{over:.2f}x over ({over * worst_floor.median * 1000:.0f} ms): what the entry points import "
                "beyond their dependencies (cairn's own modules and the pydantic models they define, the bundle's "
                "pipeline, the parts of pydantic and Powertools the floor does not load) costs more than 0.3x "
                "the floor; see what phases imports beyond boto3",
            )
        )


def bytecode_section(setup: Setup, result: Result) -> None:
    """(a), as deployed: the layer and functions/ without .pyc, then with the layer's .pyc; none written."""
    if setup.quick or setup.interpreter is setup.venv:
        return
    say("(a) without a bytecode cache, and with the layer's shipped bytecode")
    bare_root = setup.scratch / "no-bytecode"
    no_cache = shutil.ignore_patterns("__pycache__")
    shutil.copytree(setup.interpreter.requirements[0], bare_root / "requirements", ignore=no_cache)
    shutil.copytree(setup.now.functions, bare_root / "functions", ignore=no_cache)
    stage_package(bare_root / "layer")
    shipped_root = setup.scratch / "shipped-bytecode"
    shutil.copytree(bare_root, shipped_root)
    for folder in ("requirements", "layer"):  # what layers/Makefile compiles; functions/ stays as sam build copies it
        compiled = subprocess.run(
            [*compile_as_shipped(setup.interpreter.python), str(shipped_root / folder)],
            capture_output=True,
            text=True,
            check=False,
        )
        if compiled.returncode != 0:
            result.unmeasured.append(f"the shipped bytecode: compileall failed: {compiled.stderr[-400:]}")
            return
    rows = []
    summaries: dict[str, dict[str, Summary]] = {}
    for label, root in (("no .pyc", bare_root), ("the layer's .pyc", shipped_root)):
        interpreter = Interpreter(setup.interpreter.python, setup.interpreter.flags, (root / "requirements",), label)
        deployed = Code("deployed", root / "layer", root / "functions")
        variants = [ImportVariant(module, deployed, "Lambda, tracing on") for module in ("boto3", setup.modules[0])]
        cold = measure_imports(interpreter, variants, max(3, setup.repeats // 2), {"PYTHONDONTWRITEBYTECODE": "1"})
        boto3, phases = (cold[variant.key] for variant in variants)
        summaries[label] = {"boto3": boto3, setup.modules[0]: phases}
        rows += [
            [label, "import boto3", ms_cell(boto3), "1.00x"],
            [label, f"import {setup.modules[0]}", ms_cell(phases), ratio(phases, boto3)],
        ]
    result.tables.append(
        Table(
            "Import on a read-only layer, without and with its bytecode (Lambda, tracing on)",
            ["layer", "import", "ms", "x boto3"],
            rows,
            "The staged layer and functions/ with PYTHONDONTWRITEBYTECODE=1, as in Lambda, where /opt cannot be "
            "written. No .pyc: every module of the layer compiled at each import. The layer's .pyc: the layer and "
            f"its requirements compiled as layers/Makefile compiles them (unchecked-hash, for {RUNTIME}); "
            "functions/ without (sam build copies it as it is).",
        )
    )
    result.data["no_bytecode_ms"] = {name: asdict_ms(summary) for name, summary in summaries["no .pyc"].items()}
    result.data["shipped_bytecode_ms"] = {
        name: asdict_ms(summary) for name, summary in summaries["the layer's .pyc"].items()
    }


def importtime_section(setup: Setup, result: Result) -> None:
    """(a): the heaviest imports of the phase entry point, by module and by top-level package."""
    module = setup.modules[0]
    runs = 1 if setup.quick else 3
    say(f"(a) -X importtime of {module}")
    profile = importtime_profile(setup.interpreter, setup.now, module, runs)
    heaviest = sorted(profile.items(), key=lambda item: item[1][0], reverse=True)[:10]
    result.tables.append(
        Table(
            f"The 10 heaviest imports of {module} (Lambda, tracing on, -X importtime)",
            ["module", "self ms", "cumulative ms"],
            [[name, f"{own / 1000:.1f}", f"{total / 1000:.1f}"] for name, (own, total) in heaviest],
            "Self: the module's own body (for cairn.core.models: building its pydantic models); cumulative: with what "
            "it "
            f"imported first. Median of {runs} run(s); -X importtime adds its own overhead.",
        )
    )
    reference = importtime_profile(setup.interpreter, setup.now, "boto3", runs)
    beyond: dict[str, float] = {}
    for name, (own, _) in profile.items():
        if name not in reference:
            beyond[name.split(".")[0]] = beyond.get(name.split(".")[0], 0.0) + own
    whole = sum(beyond.values())
    top = sorted(beyond.items(), key=lambda item: item[1], reverse=True)[:10]
    rows = [[name, f"{own / 1000:.1f}", f"{own / whole:.0%}"] for name, own in top]
    rows.append(["all of it", f"{whole / 1000:.1f}", "100%"])
    result.tables.append(
        Table(
            f"What {module} imports beyond boto3, by top-level package (Lambda, tracing on, -X importtime)",
            ["package", "ms (self, summed)", "share"],
            rows,
            f"The modules {module} imports that a fresh `import boto3` does not, their self times summed by "
            f"top-level package; everything {module} imports: {sum(own for own, _ in profile.values()) / 1000:.0f} "
            f"ms, everything boto3 imports: {sum(own for own, _ in reference.values()) / 1000:.0f} ms (with "
            "-X importtime's overhead).",
        )
    )
    result.data["importtime_top_us"] = {name: {"self": own, "cumulative": total} for name, (own, total) in heaviest}
    result.data["beyond_boto3_us"] = dict(top)


TRANSITION_COLUMNS = ["process", "environment", "start-up ms", "import ms", "first event ms", "warm event ms"]
TRANSITION_COLUMNS += ["total ms", "x boto3"]


def transition_section(setup: Setup, result: Result) -> None:
    """(b): the time to the first transition of a fresh process, before and now, against a fresh import boto3."""
    environments = ENVIRONMENTS[:2] if not setup.quick else ENVIRONMENTS[:1]
    repeats = 1 if setup.quick else 3
    say(f"(b) first transition: {len(setup.codes)} code version(s) x {len(environments)} environment(s)")
    try:
        transitions = measure_first_transitions(setup.venv, setup.codes, environments, repeats)
    except (RuntimeError, subprocess.TimeoutExpired) as exc:
        result.unmeasured.append(f"first transition: {str(exc).splitlines()[0]}")
        return
    rows: list[list[str]] = []
    figures_ms: dict[str, dict[str, dict[str, float]]] = {}
    for where in environments:
        boto3 = transitions[f"import boto3 | {where}"]
        boto3_total = boto3["startup"].median + boto3["import"].median
        rows.append(
            [
                "import boto3",
                where,
                ms_cell(boto3["startup"]),
                ms_cell(boto3["import"]),
                "",
                "",
                f"{boto3_total * 1000:.0f}",
                "1.00x",
            ]
        )
        for code in setup.codes:
            key = f"{code.label} | {where}"
            figures = transitions[key]
            total = figures["startup"].median + figures["import"].median + figures["first"].median
            rows.append(
                [
                    f"first transition, {code.label}",
                    where,
                    ms_cell(figures["startup"]),
                    ms_cell(figures["import"]),
                    ms_cell(figures["first"]),
                    ms_cell(figures["warm"]),
                    f"{total * 1000:.0f}",
                    f"{total / boto3_total:.2f}x",
                ]
            )
            figures_ms[key] = {name: asdict_ms(summary) for name, summary in figures.items()}
    result.tables.append(
        Table(
            "Time to the first transition in a fresh process",
            TRANSITION_COLUMNS,
            rows,
            f"Median (min-max) of {repeats} fresh process(es) ({setup.venv.description}: moto is needed). Start-up: "
            "from spawning the process to its first statement; import: phases (the init); first event: fetch of "
            "document-intake through the handler (runtime and clients built, claim, run, commit); total = start-up "
            "+ import + first event, moto's setup between import and event left out (it is not in Lambda). Warm "
            "event: a second job's fetch in the same process, for scale: both events include moto answering "
            "in-process. x boto3: over a fresh process's start-up and import boto3. With tracing on, each event "
            "runs under a sampled trace header (subsegments sent by UDP to a daemon address nobody listens on).",
        )
    )
    result.data["first_transition_ms"] = figures_ms


def layer_section(setup: Setup, result: Result) -> None:
    """(c): the layer built for the template's architecture, its size, by distribution; the target."""
    if setup.quick:
        result.notes.append("--quick: the layer's size is measured by the full run only.")
        return
    tag = PLATFORM_TAGS[ARCHITECTURE]
    say(f"(c) building the layer for {ARCHITECTURE} ({tag}, Python {RUNTIME_PYTHON})")
    folder = setup.scratch / "layer"
    error = build_layer(folder, tag)
    local = local_platform_tag()
    if error and local:
        result.notes.append(f"pip could not install for {tag} ({error}): the layer is this machine's platform.")
        tag = local
        shutil.rmtree(folder, ignore_errors=True)
        error = build_layer(folder, tag)
    if error:
        result.unmeasured.append(f"the layer's size: {error}")
        return
    source = measure_layer(folder, tag)
    compiled = subprocess.run(
        [*compile_as_shipped(setup.interpreter.python), str(folder / "python")],
        capture_output=True,
        text=True,
        check=False,
    )
    if compiled.returncode != 0 or setup.interpreter is setup.venv:
        shown = compiled.stderr[-300:] or f"no {RUNTIME}"
        result.unmeasured.append(f"the layer as shipped, with its bytecode: {shown}")
        return
    layer = measure_layer(folder, tag)
    sdk = sum(size for name, size in layer.by_distribution.items() if name in AWS_SDK)
    biggest = sorted(layer.by_distribution.items(), key=lambda item: item[1], reverse=True)
    bytecode = layer.unzipped - source.unzipped

    def share(size: int) -> str:
        return f"{size / layer.unzipped:.0%}"

    rows = [
        ["the layer as sam build ships it (python/, with its .pyc)", mb(layer.unzipped), mb(layer.zipped), "100%"],
        ["of which the .pyc", mb(bytecode), "", share(bytecode)],
        [
            "the layer without its .pyc",
            mb(source.unzipped),
            mb(source.zipped),
            f"{source.unzipped / layer.unzipped:.0%}",
        ],
    ]
    rows += [[name, mb(size), "", f"{size / layer.unzipped:.0%}"] for name, size in biggest[:10]]
    rows.append([f"the AWS SDK ({', '.join(AWS_SDK)})", mb(sdk), "", f"{sdk / layer.unzipped:.0%}"])
    rows.append(
        [
            "the layer without the AWS SDK (not built: see the note)",
            mb(layer.without_sdk_unzipped),
            mb(layer.without_sdk_zipped),
            f"{layer.without_sdk_unzipped / layer.unzipped:.0%}",
        ]
    )
    result.tables.append(
        Table(
            f"The Lambda layer's size ({tag}, Python {RUNTIME_PYTHON})",
            ["what", "MB unzipped", "MB zipped", "share"],
            rows,
            "The package pruned as layers/Makefile prunes it, requirements by pip install --no-compile -t python/ "
            "(binary wheels, as sam build unpacks them), then every module compiled as layers/Makefile compiles it "
            f"(unchecked-hash .pyc for {RUNTIME}: what sam build ships); bytes of the files (10^6 per MB), zipped "
            f"with deflate. By distribution from each RECORD, a .pyc with its source. The {RUNTIME} runtime has its "
            "own boto3 and botocore, but aws-xray-sdk (Powertools' "
            "tracer) requires botocore, so sam build's pip resolution puts it in the layer whatever requirements.txt "
            "says; leaving the SDK out takes a build without dependency resolution, and runs on the runtime's SDK "
            "version instead of the pinned one.",
        )
    )
    met = layer.unzipped / 1e6 < LAYER_TARGET_MB
    result.targets.append(
        Target(
            "The layer's size, as shipped",
            f"smaller than {LAYER_TARGET_MB:g} MB",
            f"{mb(layer.unzipped)} MB unzipped ({mb(bytecode)} MB of it .pyc), {mb(layer.zipped)} MB zipped",
            met,
            ""
            if met
            else f"{layer.unzipped / 1e6 - LAYER_TARGET_MB:.1f} MB over unzipped: the .pyc are {mb(bytecode)} MB "
            "(they take a cold import from about 3x to 2.2x import boto3: see the bytecode table); botocore alone "
            f"is {layer.by_distribution.get('botocore', 0) / 1e6:.1f} MB (every service's model); without the AWS "
            f"SDK the layer would be {mb(layer.without_sdk_unzipped)} MB, which takes a custom build (see the table)",
        )
    )
    result.data["layer"] = {
        "platform": tag,
        "unzipped": layer.unzipped,
        "zipped": layer.zipped,
        "by_distribution": layer.by_distribution,
        "without_sdk_unzipped": layer.without_sdk_unzipped,
        "without_sdk_zipped": layer.without_sdk_zipped,
    }


def main(argv: Sequence[str] | None = None) -> int:
    """Measure, write ``benchmarks/results/latest/cold_start.json``; non-zero if something could not be measured."""
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs, this interpreter, no layer build")
    parser.add_argument(
        "--baseline", default=None, help=f"the revision of 'before' (default {BASELINE}; --quick: none)"
    )
    parser.add_argument("--repeats", type=int, default=None, help="fresh processes per import (default 7; --quick 3)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    load_before = os.getloadavg()[0]
    quick = bool(args.quick)
    repeats = args.repeats or (3 if quick else 7)
    baseline = args.baseline if args.baseline is not None else ("" if quick else BASELINE)
    result = Result(
        SUITE,
        "Cold start",
        "Import time of each Lambda entry point and the first transition of a fresh process, as ratios to "
        "`import boto3`; the Lambda layer's size.",
    )
    result.versions = common.versions("boto3", "botocore", "pydantic", "aws-lambda-powertools", "aws-xray-sdk", "moto")
    with tempfile.TemporaryDirectory(prefix="cairn-bench-cold-") as scratch:
        setup = prepare(result, Path(scratch), quick=quick, repeats=repeats, baseline=baseline)
        result.data.update(
            machine=common.machine(),
            entry_points=setup.modules,
            repeats=repeats,
            import_interpreter=setup.interpreter.description,
            codes=[code.label for code in setup.codes],
        )
        try:
            import_section(setup, result)
            bytecode_section(setup, result)
            importtime_section(setup, result)
        except (RuntimeError, subprocess.TimeoutExpired) as exc:
            result.unmeasured.append(f"imports: {str(exc).splitlines()[0]}")
        transition_section(setup, result)
        layer_section(setup, result)
    result.notes.append(
        "'now' against 'before': the X-Ray tracer is made (and the X-Ray SDK imported) only where tracing is on "
        "(cairn.aws.observability.tracing_enabled), and cairn.FileStorage (filelock, asyncio) is imported on first "
        "use."
    )
    result.notes.append(common_load_note(load_before))
    common.write_result(result, started)
    return 1 if result.unmeasured else 0


if __name__ == "__main__":
    sys.exit(main())
