"""``cairn template check`` names the phase of every disagreement between template.yaml and the registry."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from cairn.bundle.templating import TemplateError, check, load_registry
from cairn.bundle.templating.loading import DEFAULT_FUNCTIONS
from cairn.cli import main
from pipelines import PIPELINES
from tests.template.cfn import ROOT, TEMPLATE

FUNCTIONS = ROOT / DEFAULT_FUNCTIONS
REGISTRIES = "tests.template.registries"
#: What a copy of the bundle links to: the folders and files the template's paths name (a build output
#: such as the layer's staging folder is accepted through .gitignore).
BUNDLE_LINKS = ("functions", "layers", "statemachine", ".gitignore")


def bundle_with(folder: Path, text: str, links: tuple[str, ...] = BUNDLE_LINKS) -> Path:
    """A copy of the bundle in ``folder``: ``text`` as its template.yaml, ``links`` to this bundle's files."""
    for name in links:
        if (ROOT / name).exists() and not (folder / name).exists():
            (folder / name).symlink_to(ROOT / name, target_is_directory=(ROOT / name).is_dir())
    schemas = ROOT / "state-schemas.json"  # copied, not linked: a sync writes it
    if schemas.exists() and not (folder / schemas.name).exists():
        (folder / schemas.name).write_bytes(schemas.read_bytes())
    template = folder / "template.yaml"
    template.write_text(text, encoding="utf-8")
    return template


def copy_of_template(tmp_path: Path, old: str = "", new: str = "", count: int = 1) -> Path:
    """A copy of the bundle in ``tmp_path``, the first ``count`` occurrences of ``old`` in its template made ``new``."""
    text = TEMPLATE.read_text(encoding="utf-8")
    if old:
        assert old in text, old
        text = text.replace(old, new, count)
    return bundle_with(tmp_path, text)


def problems_with(template: Path, registry: str) -> list[str]:
    return check(template, load_registry(f"{REGISTRIES}:{registry}", FUNCTIONS), FUNCTIONS)


def run_check(template: Path, registry: str, capsys: pytest.CaptureFixture[str]) -> tuple[int, list[str]]:
    """``cairn template check`` on ``template``: its exit status and its lines on stderr."""
    status = main(
        ["template", "check", "--template", str(template), "--functions", str(FUNCTIONS), "--registry", registry]
    )
    return status, capsys.readouterr().err.splitlines()


def test_the_bundle_template_matches_its_registry(capsys: pytest.CaptureFixture[str]) -> None:
    assert check(TEMPLATE, PIPELINES, FUNCTIONS) == []
    assert main(["template", "check", "--root", str(ROOT)]) == 0
    assert "matches the registry" in capsys.readouterr().out


def test_a_missing_phase_function_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    template = copy_of_template(tmp_path)
    expected = 'phase "archive" of pipeline "document-intake": no function in template.yaml'
    assert any(problem.startswith(expected) for problem in problems_with(template, "WITH_ANOTHER_PHASE"))
    status, lines = run_check(template, f"{REGISTRIES}:WITH_ANOTHER_PHASE", capsys)
    assert status == 1
    assert f"{template}: {expected} (expected DocumentIntakeArchiveFunction)" in lines


@pytest.mark.parametrize(
    ("handler", "message"),
    [
        ("phases.handlr", "module 'phases' has no attribute 'handlr'"),
        ("phase.handler", "no module phase.py"),
    ],
)
def test_a_handler_typo_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], handler: str, message: str
) -> None:
    template = copy_of_template(tmp_path, "Handler: phases.handler", f"Handler: {handler}")
    status, lines = run_check(template, "pipelines:PIPELINES", capsys)
    assert status == 1
    (line,) = [line for line in lines if "its handler" in line or ".Handler:" in line]  # the phase's line only
    assert line.startswith(f'{template}: phase "fetch" of pipeline "document-intake": its handler "{handler}"')
    assert message in line


def test_a_removed_phase_left_in_the_template_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    template = copy_of_template(tmp_path)
    stale = (
        'phase "publish" of pipeline "document-intake": not in the registry, '
        "but template.yaml still has its function DocumentIntakePublishFunction"
    )
    assert stale in problems_with(template, "WITHOUT_PUBLISH")
    status, lines = run_check(template, f"{REGISTRIES}:WITHOUT_PUBLISH", capsys)
    assert status == 1
    assert f"{template}: {stale}" in lines
    assert any("generated section" in line for line in lines)


def test_a_changed_timeout_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    template = copy_of_template(tmp_path, "Timeout: 900", "Timeout: 600")
    problems = check(template, PIPELINES, FUNCTIONS)
    assert problems == [
        'phase "extract" of pipeline "document-intake": its timeout (Timeout) is 600 in template.yaml, 900 in the '
        "pipeline",
        "the generated section of template.yaml is not what the registry gives: run cairn template sync",
    ]
    status, lines = run_check(template, "pipelines:PIPELINES", capsys)
    assert (status, lines) == (1, [f"{template}: {problem}" for problem in problems])


def test_changed_memory_environment_and_statements_are_named(tmp_path: Path) -> None:
    template = copy_of_template(tmp_path)
    assert (
        'phase "extract" of pipeline "document-intake": its memory (MemorySize) is 1024 in template.yaml, 2048 in '
        "the pipeline" in problems_with(template, "LONGER_EXTRACT")
    )
    changed = problems_with(template, "OTHER_FETCH_ENVIRONMENT")
    assert (
        'phase "fetch" of pipeline "document-intake": its environment variable DOCUMENTS_BUCKET is '
        "{'Ref': 'DocumentsBucket'} in template.yaml, 'a-fixed-bucket' in the pipeline" in changed
    )
    assert (
        'phase "fetch" of pipeline "document-intake": the IAM policies of its role DocumentIntakeFetchRole in '
        "template.yaml differ from the shared policies and the statements the phase declares" in changed
    )


def test_a_template_without_its_generated_section_is_reported(tmp_path: Path) -> None:
    text = TEMPLATE.read_text(encoding="utf-8")
    unmarked = "".join(line for line in text.splitlines(True) if "cairn template sync" not in line)
    template = bundle_with(tmp_path, unmarked)
    problems = check(template, PIPELINES, FUNCTIONS)
    assert "template.yaml has no generated section (# >>> cairn template sync ...): run cairn template sync" in problems
    assert (
        "DocumentIntakeFetchFunction is written by hand in template.yaml: remove it, cairn template sync writes it"
        in problems
    )


def too_long(stack: str, source: str, logical_id: str, length: int, room: int) -> str:
    return (
        f'stack name "{stack}" ({source}) makes the FunctionName of {logical_id} {length} characters long, over its '
        f"limit of 64: use a stack name of at most {room} characters"
    )


def test_a_saved_stack_name_too_long_for_a_function_name_is_reported(tmp_path: Path) -> None:
    """document-intake-extract_page is the longest phase function suffix (28 characters): 35 fit, 36 do not."""
    template = copy_of_template(tmp_path)
    config = (ROOT / "samconfig.toml").read_text(encoding="utf-8")
    assert 'stack_name = "cairn"' in config
    (tmp_path / "samconfig.toml").write_text(config.replace('stack_name = "cairn"', f'stack_name = "{"c" * 36}"'))
    source = "samconfig.toml, [default.global.parameters]"
    assert check(template, PIPELINES, FUNCTIONS) == [
        too_long("c" * 36, source, "DocumentIntakeExtractPageFunction", 65, 35)
    ]
    (tmp_path / "samconfig.toml").write_text(config.replace('stack_name = "cairn"', f'stack_name = "{"c" * 35}"'))
    assert check(template, PIPELINES, FUNCTIONS) == []
    shutil.copy(ROOT / "samconfig.toml", tmp_path / "samconfig.toml")
    assert check(template, PIPELINES, FUNCTIONS) == []


def test_any_stack_name_the_user_passes_is_checked_instead_of_the_saved_ones(tmp_path: Path) -> None:
    template = copy_of_template(tmp_path)
    shutil.copy(ROOT / "samconfig.toml", tmp_path / "samconfig.toml")
    fits = "cairn-production-eu-west-1-team-x"  # 33 characters
    assert check(template, PIPELINES, FUNCTIONS, stack_name=[fits]) == []
    longer = "cairn-production-eu-west-1-team-docs-42"  # 39: too long for <stack>-document-intake-extract_page
    assert check(template, PIPELINES, FUNCTIONS, stack_name=[fits, longer]) == [
        too_long(longer, "--stack-name", "DocumentIntakeExtractPageFunction", 39 + 1 + 28, 35)
    ]
    assert check(template, PIPELINES, FUNCTIONS, stack_name=["9-lives"]) == [
        'stack name "9-lives" (--stack-name) is not one CloudFormation accepts: a letter, then up to 127 letters, '
        "digits and hyphens"
    ]


@pytest.mark.parametrize("length", [35, 36, 60, 128])
def test_through_the_command_a_stack_name_is_refused_exactly_when_a_name_would_not_fit(
    tmp_path: Path, length: int, capsys: pytest.CaptureFixture[str]
) -> None:
    template = copy_of_template(tmp_path)
    stack = "s" * length
    status = main(["template", "check", "--root", str(ROOT), "--template", str(template), "--stack-name", stack])
    error = capsys.readouterr().err
    if length <= 35:
        assert status == 0, error
    else:
        assert status == 1
        assert f'stack name "{stack}" (--stack-name) makes the FunctionName of' in error
        assert "over its limit of 64" in error


def test_a_generated_resource_written_by_hand_is_reported(tmp_path: Path) -> None:
    template = copy_of_template(tmp_path, "  DelayedRetriesPolicy:\n", "  DocumentIntakeFetchLogGroup:\n")
    problems = check(template, PIPELINES, FUNCTIONS)
    assert (
        "DocumentIntakeFetchLogGroup is written by hand in template.yaml: remove it, cairn template sync writes it"
        in problems
    )


def test_a_registry_that_does_not_load_is_one_line_and_status_2(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(TemplateError, match="has no attribute 'NOTHING'"):
        load_registry(f"{REGISTRIES}:NOTHING", FUNCTIONS)
    status = main(["template", "check", "--root", str(ROOT), "--registry", "pipelines"])
    assert status == 2
    assert capsys.readouterr().err == (
        "cairn: error: invalid registry 'pipelines': expected MODULE:ATTR, e.g. pipelines:PIPELINES\n"
    )
