"""checkov in ``make validate``: no check skipped for the whole stack; a skip sits on the resources it fails on.

``python -m tests.template.test_checkov FOLDER`` writes what ``make validate`` gives checkov: template.yaml as
CloudFormation receives it (``AWS::LanguageExtensions``, then the SAM transform: tests/template/cfn.py), once per
deployment of :data:`DEPLOYMENTS`. Scanned after the transform, checkov also sees what SAM creates (each function's
role and inline policies, the invoke permissions, the HTTP API's stage, the state machine's role), which it skips
or only half reads in the SAM template; the two deployments take both branches of the template's ``Fn::If``.
"""

from __future__ import annotations

import json
import logging
import re
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from cairn.bundle.templating.checkov_skips import FUNCTION_CHECKS, LOG_GROUP_CHECKS, REASONS
from tests.template.cfn import ROOT, evaluate_conditions, parameter_values, sam_template, sam_transform

CHECKOV_CONFIG = ROOT / ".checkov.yaml"
CHECKOV_DOC = ROOT / "docs" / "CHECKOV.md"
MAKEFILE = ROOT / "Makefile"
REQUIREMENTS = ROOT / "requirements-checkov.txt"

CHECK_ID = re.compile(r"CKV2?_[A-Z0-9]+_\d+")
STATUSES = {"fixed", "skipped", "lead to fix"}

#: The deployments checkov scans: the parameters' defaults (what `sam deploy` with samconfig.toml deploys), and
#: every optional branch on (the stepfunctions driver, JWT, a documents bucket, a Bedrock model, alarm
#: notifications, production settings, ...): every condition of the template is false in one and true in the other.
DEPLOYMENTS: dict[str, dict[str, str]] = {
    "defaults": {},
    "every-option": {
        "Driver": "stepfunctions",
        "ApiAuth": "JWT",
        "JwtIssuer": "https://issuer.example.com/pool",
        "JwtAudience": "client-a,client-b",
        "DocumentsBucket": "cairn-documents-example",
        "AgentModelId": "anthropic.claude-3-5-haiku-20241022-v1:0",
        "AlarmEmail": "oncall@example.com",
        "AlarmTopicArn": "arn:aws:sns:us-east-1:123456789012:oncall",
        "Stage": "prod",
        "TableDeletionProtection": "enabled",
        "PhaseReservedConcurrency": "10",
        "SchedulerReservedConcurrency": "30",
        "ApiReservedConcurrency": "20",
        "OwnerConcurrency": "50",
        "LogRetentionDays": "90",
        "TableKmsKeyArn": "arn:aws:kms:us-east-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab",
        "BucketKmsKeyArn": "arn:aws:kms:us-east-1:123456789012:key/2234abcd-12ab-34cd-56ef-1234567890ab",
        "LogsKmsKeyArn": "arn:aws:kms:us-east-1:123456789012:key/3234abcd-12ab-34cd-56ef-1234567890ab",
        "MaxTransitions": "1000",
        "MaxMapConcurrency": "10",
        "StepFunctionsLogLevel": "ALL",
        "GradualDeployment": "Canary10Percent5Minutes",
    },
}


def deployed(name: str) -> dict[str, Any]:
    """The plain CloudFormation template of deployment ``name``."""
    return sam_transform(**DEPLOYMENTS[name])


def scanned(name: str) -> dict[str, Any]:
    """What checkov reads of deployment ``name``: its template, each parameter's default its value there.

    checkov evaluates a ``Ref`` to a parameter as the parameter's default; the SAM transform leaves such refs
    in place (``ReservedConcurrentExecutions: !Ref PhaseReservedConcurrency``), so the defaults say which values.
    """
    template = deployed(name)
    for parameter, value in DEPLOYMENTS[name].items():
        template["Parameters"][parameter]["Default"] = value
    return template


def write(folder: Path) -> list[Path]:
    """Each deployment's template as JSON in ``folder`` (checkov's input), its path."""
    written = []
    for name in DEPLOYMENTS:
        path = folder / f"template-{name}.json"
        path.write_text(json.dumps(scanned(name), indent=1) + "\n", encoding="utf-8")
        written.append(path)
    return written


# -- the skips (each resource's Metadata), .checkov.yaml and docs/CHECKOV.md

CHECKED_TYPE = {
    "CKV_AWS_115": "AWS::Lambda::Function",
    "CKV_AWS_116": "AWS::Lambda::Function",
    "CKV_AWS_117": "AWS::Lambda::Function",
    "CKV_AWS_173": "AWS::Lambda::Function",
    "CKV_AWS_158": "AWS::Logs::LogGroup",
    "CKV_AWS_119": "AWS::DynamoDB::Table",
    "CKV_AWS_18": "AWS::S3::Bucket",
    "CKV_AWS_27": "AWS::SQS::Queue",
}
"""The resource type each skipped check reads: a skip sits on resources of that type only."""
SAM_COPY = "AWS::Lambda::EventInvokeConfig"


def resource_skips(name: str) -> dict[str, dict[str, str]]:
    """Each check the resources of deployment ``name`` skip: the logical id of each, with its comment."""
    found: dict[str, dict[str, str]] = {}
    for logical_id, resource in deployed(name)["Resources"].items():
        for skip in ((resource.get("Metadata") or {}).get("checkov") or {}).get("skip", []):
            found.setdefault(str(skip.get("id")), {})[logical_id] = str(skip.get("comment", ""))
    return found


def skips() -> dict[str, str]:
    """Each check skipped on some resource of either deployment, with its reason (checkov_skips.REASONS)."""
    checks = {check for name in DEPLOYMENTS for check in resource_skips(name)}
    return {check: REASONS.get(check, "") for check in sorted(checks)}


@pytest.mark.parametrize("name", list(DEPLOYMENTS))
def test_every_skip_is_a_check_id_on_a_resource_it_reads_with_the_one_reason(name: str) -> None:
    template = deployed(name)
    found = resource_skips(name)
    assert found, "no resource skips a check: the Metadata is not where this test reads it"
    for check, resources in found.items():
        assert CHECK_ID.fullmatch(check), f"not a checkov check id: {check}"
        # SAM copies a function's Metadata to the EventInvokeConfig it makes for it, which no check reads
        kinds = {template["Resources"][logical_id]["Type"] for logical_id in resources} - {SAM_COPY}
        assert kinds == {CHECKED_TYPE[check]}, f"{check} is skipped on {kinds}, it reads {CHECKED_TYPE[check]}"
        wrong = [logical_id for logical_id, comment in resources.items() if comment != REASONS[check]]
        assert not wrong, f"{check}: the comment of {wrong} is not checkov_skips.REASONS[{check!r}]"
        assert len(REASONS[check].split()) >= 5


def test_no_check_is_skipped_for_the_whole_stack() -> None:
    loaded = yaml.safe_load(CHECKOV_CONFIG.read_text(encoding="utf-8"))
    assert loaded == {"skip-check": []}, (
        ".checkov.yaml skips nothing and sets nothing else: skip a check on the resources it fails on, in their "
        f"Metadata (cairn/bundle/templating/checkov_skips.py): {loaded}"
    )


def test_every_function_and_log_group_of_the_stack_says_why_it_skips() -> None:
    template = deployed("defaults")
    for logical_id, resource in template["Resources"].items():
        if resource["Type"] == "AWS::Lambda::Function":
            expected = set(FUNCTION_CHECKS)
        elif resource["Type"] == "AWS::Logs::LogGroup" and logical_id != "StateMachineLogGroup":
            expected = set(LOG_GROUP_CHECKS)
        else:
            continue
        skipped = {skip["id"] for skip in resource.get("Metadata", {}).get("checkov", {}).get("skip", [])}
        assert skipped == expected, f"{logical_id} skips {sorted(skipped)}, not {sorted(expected)}"


def documented() -> dict[str, dict[str, str]]:
    """docs/CHECKOV.md's table: check id to its columns (check, what, resources, status, reason)."""
    rows: dict[str, dict[str, str]] = {}
    header: list[str] = []
    for line in CHECKOV_DOC.read_text(encoding="utf-8").splitlines():
        if not line.startswith("|"):
            header = [] if not line.strip() else header
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if not header:
            header = [cell.lower() for cell in cells]
            continue
        if set("".join(cells)) <= set("-: "):
            continue
        row = dict(zip(header, cells, strict=True))
        check = row.get("check", "").strip("`")
        if CHECK_ID.fullmatch(check):
            assert check not in rows, f"docs/CHECKOV.md lists {check} twice"
            rows[check] = {**row, "check": check, "status": row.get("status", "").strip("*").lower()}
    return rows


def test_every_skip_is_in_the_doc_and_every_doc_skip_is_on_a_resource() -> None:
    rows = documented()
    bad_status = {check: row["status"] for check, row in rows.items() if row["status"] not in STATUSES}
    assert not bad_status, f"docs/CHECKOV.md: status must be one of {sorted(STATUSES)}: {bad_status}"
    doc_skips = {check for check, row in rows.items() if row["status"] == "skipped"}
    config_skips = set(skips())
    assert not config_skips - doc_skips, (
        f"skipped on resources but not listed as skipped in docs/CHECKOV.md: {sorted(config_skips - doc_skips)}"
    )
    assert not doc_skips - config_skips, (
        f"docs/CHECKOV.md says skipped, no resource skips it: {sorted(doc_skips - config_skips)}"
    )
    no_reason = [check for check, row in rows.items() if len(row.get("reason", "").split()) < 5]
    assert not no_reason, f"docs/CHECKOV.md: give these a reason: {no_reason}"
    no_resources = [check for check, row in rows.items() if not row.get("resources")]
    assert not no_resources, f"docs/CHECKOV.md: name the resources of: {no_resources}"


def test_make_validate_runs_checkov_with_the_config_offline() -> None:
    makefile = MAKEFILE.read_text(encoding="utf-8").replace("\\\n", " ")
    command = next((line for line in makefile.splitlines() if "$(CHECKOV) " in line), "")
    for option in ("--config-file .checkov.yaml", "--skip-download", "--framework cloudformation"):
        assert option in command, f"the Makefile's checkov command lacks {option}: {command!r}"
    assert "CKV_SKIP_PACKAGE_UPDATE_CHECK=true" in command, "checkov must not ask PyPI for a newer version"
    assert re.fullmatch(r"checkov==[0-9][0-9.]*", _pins(REQUIREMENTS)[0]), "pin checkov exactly (==)"


def _pins(path: Path) -> list[str]:
    return [line.strip() for line in path.read_text(encoding="utf-8").splitlines() if line.strip()[:1] not in "#"]


def test_the_deployments_take_both_branches_of_every_condition() -> None:
    template = sam_template()
    values = {
        name: evaluate_conditions(template, parameter_values(template, given)) for name, given in DEPLOYMENTS.items()
    }
    one_sided = [
        condition
        for condition in values["defaults"]
        if values["defaults"][condition] == values["every-option"][condition]
    ]
    assert not one_sided, (
        f"checkov sees only one branch of {one_sided}: set the parameters that turn them on (or off) in "
        "DEPLOYMENTS['every-option'] of tests/template/test_checkov.py"
    )


# -- what the skips rely on, checked here since checkov no longer looks


@pytest.mark.parametrize("name", list(DEPLOYMENTS))
def test_every_queue_is_encrypted_at_rest(name: str) -> None:
    """CKV_AWS_27 is skipped because it reads only KmsMasterKeyId: every queue encrypts with SSE-SQS or a key."""
    queues = _of_type(deployed(name), "AWS::SQS::Queue")
    assert queues
    plain = [
        logical_id
        for logical_id, properties in queues.items()
        if properties.get("SqsManagedSseEnabled") is not True and not properties.get("KmsMasterKeyId")
    ]
    assert not plain, f"queues without encryption at rest (set SqsManagedSseEnabled: true): {plain}"


@pytest.mark.parametrize("name", list(DEPLOYMENTS))
def test_no_function_environment_holds_a_secret_looking_name(name: str) -> None:
    """CKV_AWS_173 is skipped because the variables are names and settings: keep secrets out of them."""
    secret = re.compile(r"SECRET|PASSWORD|TOKEN|PRIVATE_KEY|API_KEY", re.IGNORECASE)
    found = [
        f"{logical_id}.{variable}"
        for logical_id, properties in _of_type(deployed(name), "AWS::Lambda::Function").items()
        for variable in (properties.get("Environment") or {}).get("Variables", {})
        if secret.search(variable)
    ]
    assert not found, f"a secret belongs in Secrets Manager or SSM, not in an environment variable: {found}"


def _of_type(template: Mapping[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {
        logical_id: resource.get("Properties", {})
        for logical_id, resource in template["Resources"].items()
        if resource["Type"] == kind
    }


def main(argv: list[str]) -> int:
    """Write each deployment's template into the folder given."""
    if len(argv) != 1:
        print("usage: python -m tests.template.test_checkov FOLDER", file=sys.stderr)
        return 2
    # The SAM translator's warnings (feature toggles it has no config for, metrics it never publishes) are not
    # about the template.
    logging.getLogger("samtranslator").setLevel(logging.ERROR)
    write(Path(argv[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
