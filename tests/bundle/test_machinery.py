"""A bundle's template is short where its owner edits it: cairn's machinery (the table, the bucket, the API, the
scheduler, the alarms, the dashboard, their parameters) lies between marker lines that ``cairn template sync``
writes and ``cairn template check`` guards, as a user runs them in a bundle ``cairn init`` made."""

from __future__ import annotations

import os
import re
import shutil
from pathlib import Path

import pytest

from cairn.bundle import python_runtime
from cairn.bundle.templating import TemplateError, cfnyaml, machinery, sync
from cairn.core.registry import PipelineRegistry
from cairn.distribution import spelled
from tests.bundle.test_init import cairn

USER_PART_LIMIT = 200
"""The most lines of a new bundle's template its owner reads and edits (issue: at most about 200)."""
MACHINERY = {
    "AWS::DynamoDB::Table",
    "AWS::S3::Bucket",
    "AWS::Serverless::HttpApi",
    "AWS::SQS::Queue",
    "AWS::CloudWatch::Alarm",
    "AWS::CloudWatch::Dashboard",
    "AWS::Serverless::LayerVersion",
}
OWN_RESOURCE = (
    "  ReportsQueue:\n    Type: AWS::SQS::Queue\n    Condition: IsEu\n    Properties:\n      Tags:\n"
    "        - Key: prefix\n          Value: !Ref ReportPrefix\n"
)
OWN_CONDITION = '  IsEu: !Equals [!Ref "AWS::Region", eu-west-1]\n'
OWN_OUTPUT = "  ReportsQueueUrl:\n    Condition: IsEu\n    Value: !Ref ReportsQueue\n"
OWN_PARAMETER = "  ReportPrefix:\n    Type: String\n    Default: reports/\n"


@pytest.fixture(scope="module")
def made(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("machinery")
    done = cairn("init", "shop", "--runtime", "python3.12", cwd=folder)
    assert done.returncode == 0, done.stdout + done.stderr
    return folder / "shop"


@pytest.fixture
def bundle(made: Path, tmp_path: Path) -> Path:
    return Path(shutil.copytree(made, tmp_path / "shop"))


def user_lines(text: str) -> list[str]:
    """The lines outside cairn's blocks and the generated section: what the bundle's owner reads and edits."""
    kept, inside = [], False
    for line in text.splitlines():
        marker = line.strip()
        if marker.startswith(("# >>> cairn", "# <<< cairn")):
            inside = marker.startswith("# >>>")
            continue
        if not inside:
            kept.append(line)
    return kept


def with_own_parts(text: str) -> str:
    """``text`` with a resource, a condition, an output and a parameter of the owner's, where the template says."""
    text = text.replace("Resources:\n", "Resources:\n" + OWN_RESOURCE, 1)
    text = text.replace("Conditions:\n", "Conditions:\n" + OWN_CONDITION, 1)
    text = text.replace("Outputs:\n", "Outputs:\n" + OWN_OUTPUT, 1)
    return text + OWN_PARAMETER


def check(bundle: Path) -> tuple[int, list[str]]:
    done = cairn("template", "check", cwd=bundle)
    return done.returncode, [line for line in (done.stdout + done.stderr).splitlines() if line.strip()]


def one_finding(bundle: Path, text: str) -> str:
    """The one line ``cairn template check`` prints for the bundle with ``text`` as its template."""
    (bundle / "template.yaml").write_text(text, encoding="utf-8")
    status, lines = check(bundle)
    assert status == 1
    assert len(lines) == 1, lines
    return lines[0]


def test_a_new_bundle_leaves_its_owner_a_short_template_and_cairn_the_machinery(made: Path) -> None:
    text = (made / "template.yaml").read_text(encoding="utf-8")
    own = user_lines(text)
    print(f"{len(text.splitlines())} lines, {len(own)} of them the owner's")
    assert len(own) <= USER_PART_LIMIT
    outside = cfnyaml.load("\n".join(own).replace("Resources:", "Resources: {}").replace("Outputs:", "Outputs: {}"))
    assert not any(resource.get("Type") in MACHINERY for resource in (outside.get("Resources") or {}).values())
    loaded = cfnyaml.load(text)
    assert {resource["Type"] for resource in loaded["Resources"].values()} >= MACHINERY
    assert set(machinery.blocks(text)) == {"conditions", "outputs", "stack"}
    assert check(made) == (0, ["template.yaml: matches the registry"])


def test_the_owners_parts_pass_the_check_and_survive_a_sync(bundle: Path) -> None:
    template = bundle / "template.yaml"
    template.write_text(with_own_parts(template.read_text(encoding="utf-8")), encoding="utf-8")
    assert check(bundle)[0] == 0

    synced = cairn("template", "sync", cwd=bundle)

    assert synced.returncode == 0, synced.stderr
    text = template.read_text(encoding="utf-8")
    assert all(part in text for part in (OWN_RESOURCE, OWN_CONDITION, OWN_OUTPUT, OWN_PARAMETER))
    loaded = cfnyaml.load(text)
    assert "ReportsQueue" in loaded["Resources"]
    assert "ReportPrefix" in loaded["Parameters"]


def test_an_edit_inside_the_machinery_is_named_and_never_overwritten_unless_discarded(bundle: Path) -> None:
    template = bundle / "template.yaml"
    original = template.read_text(encoding="utf-8")
    edited = with_own_parts(original).replace("BillingMode: PAY_PER_REQUEST", "BillingMode: PROVISIONED", 1)
    template.write_text(edited, encoding="utf-8")
    line = edited.splitlines().index("      BillingMode: PROVISIONED") + 1
    named = f"line {line} ('BillingMode: PROVISIONED'; cairn writes 'BillingMode: PAY_PER_REQUEST')"

    status, lines = check(bundle)
    refused = cairn("template", "sync", cwd=bundle)

    assert status == 1
    assert lines == [
        f'template.yaml: {named}, in the cairn machinery "stack", was changed by hand: {spelled()} writes it '
        "otherwise: move your change outside the block, then run cairn template sync --discard-edits"
    ]
    assert refused.returncode == 2
    assert named in refused.stderr
    assert "--discard-edits" in refused.stderr
    assert template.read_text(encoding="utf-8") == edited, "a refused sync writes nothing"

    discarded = cairn("template", "sync", "--discard-edits", cwd=bundle)

    assert discarded.returncode == 0, discarded.stderr
    assert "rewrote the cairn machinery stack" in discarded.stdout
    assert template.read_text(encoding="utf-8") == with_own_parts(original)
    assert check(bundle)[0] == 0


def test_a_sync_keeps_the_bundles_runtime_and_brings_the_layer_to_it(bundle: Path) -> None:
    """The runtime is the one line of the machinery that is the owner's (cairn init --runtime wrote 3.12 here)."""
    template = bundle / "template.yaml"
    text = template.read_text(encoding="utf-8")
    assert python_runtime.chosen(cfnyaml.load(text)) == "python3.12"
    moved = text.replace("    Runtime: python3.12\n", "    Runtime: python3.13\n", 1)
    assert "CairnLayer.CompatibleRuntimes: python3.12" in one_finding(bundle, moved)

    assert cairn("template", "sync", cwd=bundle).returncode == 0

    loaded = cfnyaml.load(template.read_text(encoding="utf-8"))
    assert python_runtime.chosen(loaded) == "python3.13"
    assert loaded["Resources"]["CairnLayer"]["Properties"]["CompatibleRuntimes"] == ["python3.13"]
    assert check(bundle)[0] == 0


def test_a_checkout_with_windows_line_ends_has_changed_no_line(bundle: Path) -> None:
    template = bundle / "template.yaml"
    template.write_bytes(template.read_bytes().replace(b"\n", b"\r\n"))
    assert check(bundle)[0] == 0


def test_a_sync_that_cannot_finish_writing_leaves_the_template_as_it_was(
    bundle: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The template is written whole or not at all: a failure at the last step (here the rename over it, as a full
    disk or a crash would stop it) leaves the old one and no stray file; a sync that writes keeps its permissions."""
    template = bundle / "template.yaml"
    original = template.read_text(encoding="utf-8")
    stale = re.sub(r"(cairn machinery: outputs \(sha256 )[0-9a-f]{12}", r"\g<1>000000000000", original)
    template.write_text(stale, encoding="utf-8")
    template.chmod(0o640)
    registry = PipelineRegistry([])  # the bundle's pipelines aside: the example's functions go, the machinery stays

    def refused(*_: object) -> None:
        raise OSError(28, "No space left on device")

    with monkeypatch.context() as patched:
        patched.setattr(os, "replace", refused)
        with pytest.raises(TemplateError, match="No space left on device; it is as it was"):
            sync(template, registry)

    assert template.read_text(encoding="utf-8") == stale
    assert sorted(path.name for path in bundle.iterdir() if path.name.startswith(".template")) == []
    sync(template, registry)
    written = template.read_text(encoding="utf-8")
    assert machinery.blocks(written)["outputs"].stamp == machinery.blocks(original)["outputs"].stamp
    assert machinery.problems(written) == []
    assert template.stat().st_mode & 0o777 == 0o640


def test_the_defaults_of_cairns_parameters_are_the_owners(bundle: Path) -> None:
    template = bundle / "template.yaml"
    text = template.read_text(encoding="utf-8")
    changed = text.replace("    Default: INFO\n", "    Default: DEBUG\n", 1)
    assert changed != text
    template.write_text(changed, encoding="utf-8")
    assert check(bundle)[0] == 0

    assert cairn("template", "sync", cwd=bundle).returncode == 0

    assert template.read_text(encoding="utf-8") == changed
    assert cfnyaml.load(changed)["Parameters"]["LogLevel"]["Default"] == "DEBUG"


def test_machinery_from_another_cairn_is_named_and_the_sync_writes_this_ones(bundle: Path) -> None:
    """An upgrade: the blocks an older cairn wrote (here, one setting and one line fewer, stamped as a cairn stamps
    them) and nobody changed since are rewritten."""
    template = bundle / "template.yaml"
    original = template.read_text(encoding="utf-8")
    older = original.replace('CAIRN_AWS_MAX_ATTEMPTS: "8"', 'CAIRN_AWS_MAX_ATTEMPTS: "5"', 1)
    older = machinery.stamp(older.replace("  # cairn's outputs: yours go above this block.\n", "", 1))
    template.write_text(older, encoding="utf-8")

    status, lines = check(bundle)

    assert status == 1
    assert [line.split('machinery "')[1].split('"')[0] for line in lines] == ["outputs", "stack"]
    assert all("is another cairn's, unchanged since: run cairn template sync" in line for line in lines)
    synced = cairn("template", "sync", cwd=bundle)
    assert synced.returncode == 0, synced.stderr
    assert template.read_text(encoding="utf-8") == original


def test_a_stale_stamp_is_named_and_a_sync_writes_it_again(bundle: Path) -> None:
    template = bundle / "template.yaml"
    original = template.read_text(encoding="utf-8")
    stale = re.sub(r"(cairn machinery: outputs \(sha256 )[0-9a-f]{12}", r"\g<1>000000000000", original)
    assert 'the sha256 the cairn machinery "outputs" names is not its lines' in one_finding(bundle, stale)
    assert cairn("template", "sync", cwd=bundle).returncode == 0
    assert template.read_text(encoding="utf-8") == original


@pytest.mark.parametrize(
    ("damage", "said"),
    [
        (lambda text: text.replace("  # <<< cairn machinery: outputs\n", "", 1), "not closed"),
        (
            lambda text: text.replace("  # <<< cairn machinery: outputs\n", "  # <<< cairn machinery: output\n", 1),
            "closes no open",
        ),
        (lambda text: text + "  # >>> cairn machinery: extras\n  # <<< cairn machinery: extras\n", "not a block"),
    ],
    ids=["unclosed", "misnamed", "unknown"],
)
def test_broken_markers_get_one_line_from_check_and_sync_not_a_traceback(
    bundle: Path, damage: object, said: str
) -> None:
    template = bundle / "template.yaml"
    template.write_text(damage(template.read_text(encoding="utf-8")), encoding="utf-8")  # type: ignore[operator]

    status, lines = check(bundle)
    synced = cairn("template", "sync", cwd=bundle)

    assert status == 1
    assert any(said in line for line in lines), lines
    assert synced.returncode == 2
    assert said in synced.stderr
    assert "Traceback" not in synced.stderr


def test_a_template_made_before_the_machinery_blocks_checks_and_syncs_as_before(bundle: Path) -> None:
    """A previous release's bundle: its hand-written machinery, no marker lines."""
    template = bundle / "template.yaml"
    text = "\n".join(
        line for line in template.read_text(encoding="utf-8").splitlines() if "cairn machinery: " not in line
    )
    template.write_text(text + "\n", encoding="utf-8")

    assert check(bundle)[0] == 0
    synced = cairn("template", "sync", cwd=bundle)
    assert synced.returncode == 0, synced.stderr
    assert "already in sync" in synced.stdout
    assert template.read_text(encoding="utf-8") == text + "\n"
