"""``cairn dev`` refuses to start in one line (exit status 2) when it cannot: no traceback, nothing left running."""

from __future__ import annotations

import socket
import threading
from pathlib import Path

import pytest

from cairn.cli import main


def start(capsys: pytest.CaptureFixture[str], *arguments: str) -> tuple[int, str]:
    status = main(["dev", "--no-reload", *arguments])
    return status, capsys.readouterr().err


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Resources: [\n", "not valid YAML"),
        ("- a\n- b\n", "is not a CloudFormation template"),
        (
            "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n    Properties:\n      QueueName: !ImportValue other\n",
            "CloudFormation cannot create stack cairn-dev: No export named other found",
        ),
        (
            "Transform: AWS::Serverless-2016-10-31\nResources:\n  F:\n    Type: AWS::Serverless::Function\n"
            "    Properties:\n      CodeUri: s3://bucket/code.zip\n      Handler: a.b\n      Runtime: python3.12\n"
            "      Events:\n        E:\n          Type: Bogus\n",
            "Invalid Serverless Application Specification document",
        ),
        (
            "Transform: AWS::Serverless-2016-10-31\nResources:\n  F:\n    Type: AWS::Serverless::Function\n"
            "    Properties:\n      CodeUri: missing/\n      Handler: a.b\n      Runtime: python3.12\n",
            "Resources.F.Properties.CodeUri: no folder ",
        ),
        (
            "Parameters:\n  Mode:\n    Type: String\n    AllowedValues: [a, b]\n"
            "Resources:\n  Q:\n    Type: AWS::SQS::Queue\n",
            "CloudFormation cannot create stack cairn-dev: Parameters: [Mode] must have values",
        ),
    ],
)
def test_a_template_it_cannot_deploy_is_one_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, text: str, expected: str
) -> None:
    template = tmp_path / "template.yaml"
    template.write_text(text)
    threads = threading.active_count()
    status, err = start(capsys, "--template", str(template), "--port", "0")
    assert status == 2
    assert err.startswith("cairn dev: error: ")
    assert expected in err
    assert err.count("\n") == 1
    assert "Traceback" not in err
    assert threading.active_count() == threads  # the AWS endpoint it started is stopped again


def test_a_missing_template_and_a_driver_the_template_lacks_are_named(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    status, err = start(capsys, "--template", str(tmp_path / "nowhere.yaml"))
    assert status == 2
    assert "No template at" in err
    template = tmp_path / "template.yaml"
    template.write_text("Resources:\n  Q:\n    Type: AWS::SQS::Queue\n")
    status, err = start(capsys, "--template", str(template), "--driver", "stepfunctions", "--port", "0")
    assert status == 2
    assert "has no Driver parameter" in err


def test_a_port_in_use_is_named_with_what_to_do(capsys: pytest.CaptureFixture[str]) -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        status, err = start(capsys, "--port", str(port))
    assert status == 2
    assert f"127.0.0.1:{port} is already in use" in err
    assert "--port" in err


def test_bad_options_are_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    for arguments in (["--port", "70000"], ["--concurrency", "0"], ["--driver", "fast"], ["--parameter", "oops"]):
        with pytest.raises(SystemExit) as exited:
            main(["dev", *arguments])
        assert exited.value.code == 2
