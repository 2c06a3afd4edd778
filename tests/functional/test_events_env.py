"""events/env.json: ``sam local invoke FUNCTION -e events/... --env-vars events/env.json`` against ``cairn dev``.

The file is in SAM's format: ``Parameters`` for every function, then one object per function (by logical
id) for its own variables. It points each function at the stack ``cairn dev --aws-port 4566 --stack-name
cairn-dev`` creates, reached from sam local's container on the host's network (``--docker-network host``). SAM applies a
value only to a variable the function's template Environment declares, so every declared one must be
here (a variable added to the template without its entry fails), with the names ``cairn dev`` deploys.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from typing import Any
from urllib.parse import urlsplit

import boto3
import pytest
from moto import mock_aws

from cairn.bundle.templating import cfnyaml
from cairn.core.settings import DELAY_QUEUE_URL, STATE_MACHINE_ARN
from cairn.dev.deployment import deploy
from cairn.dev.models import Deployment
from tests.events import EVENTS
from tests.tools import missing

ROOT = EVENTS.parent
TEMPLATE = ROOT / "template.yaml"
ENV_FILE = EVENTS / "env.json"
STACK = "cairn-dev"
AWS_PORT = 4566
ENDPOINT = f"http://127.0.0.1:{AWS_PORT}"
"""The local AWS endpoint as a container of ``sam local --docker-network host`` reaches ``cairn dev --aws-port 4566``
(which listens on 127.0.0.1 only)."""
SERVERLESS_FUNCTION = "AWS::Serverless::Function"
SAM_PYTHON = ROOT / ".venv-sam" / "bin" / "python"


def env_file() -> dict[str, dict[str, str]]:
    env: dict[str, dict[str, str]] = json.loads(ENV_FILE.read_text(encoding="utf-8"))
    return env


def declared() -> dict[str, list[str]]:
    """Each function's environment variables as template.yaml declares them (its Globals and its own), by logical id."""
    body = cfnyaml.load(TEMPLATE.read_text(encoding="utf-8"))
    shared = list(((body.get("Globals") or {}).get("Function", {}).get("Environment") or {}).get("Variables", {}))
    functions = {}
    for logical_id, resource in body["Resources"].items():
        if resource.get("Type") != SERVERLESS_FUNCTION:
            continue
        own = ((resource.get("Properties") or {}).get("Environment") or {}).get("Variables") or {}
        functions[logical_id] = [*shared, *(name for name in own if name not in shared)]
    return functions


def given(logical_id: str) -> dict[str, str]:
    """What env.json gives the function ``logical_id``: ``Parameters``, with its own object over them."""
    env = env_file()
    return {**env.get("Parameters", {}), **env.get(logical_id, {})}


def client(name: str) -> Any:
    return boto3.client(name, region_name="us-east-1")  # type: ignore[call-overload]


@pytest.fixture(scope="module")
def deployed() -> Iterator[tuple[Deployment, Deployment]]:
    """The template as ``cairn dev --stack-name cairn-dev`` deploys it: default driver, then stepfunctions."""
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("AWS_ACCESS_KEY_ID", "testing")
        patch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        patch.delenv("AWS_PROFILE", raising=False)
        with mock_aws():
            direct = deploy(TEMPLATE, client=client, stack_name=STACK)
        with mock_aws():
            stepfunctions = deploy(TEMPLATE, client=client, stack_name=STACK, parameters={"Driver": "stepfunctions"})
        yield direct, stepfunctions


def test_env_json_is_in_sams_format_and_names_only_functions_of_the_template() -> None:
    env = env_file()
    assert all(isinstance(section, dict) for section in env.values())
    assert all(isinstance(value, str) for section in env.values() for value in section.values())
    assert set(env) - {"Parameters"} <= set(declared())


def test_every_function_gets_every_variable_its_template_environment_declares() -> None:
    missing = {
        logical_id: sorted(set(names) - set(given(logical_id)))
        for logical_id, names in declared().items()
        if set(names) - set(given(logical_id))
    }
    assert missing == {}, "add these to events/env.json (Parameters for a Globals variable)"


def test_every_function_is_pointed_at_the_local_endpoint() -> None:
    for logical_id in declared():
        assert given(logical_id)["AWS_ENDPOINT_URL"] == ENDPOINT, logical_id


def test_the_values_are_what_cairn_dev_deploys(deployed: tuple[Deployment, Deployment]) -> None:
    direct, stepfunctions = deployed
    assert {function.logical_id for function in direct.functions.values()} == set(declared())
    for name, function in direct.functions.items():
        expected = dict(function.environment)
        # The state machine exists with Driver=stepfunctions only: its ARN is set all the same, for a switch of
        # CAIRN_DRIVER in env.json.
        assert stepfunctions.state_machine is not None
        assert stepfunctions.functions[name].environment[STATE_MACHINE_ARN] == stepfunctions.state_machine.arn
        expected[STATE_MACHINE_ARN] = stepfunctions.state_machine.arn
        assert expected.pop("AWS_ENDPOINT_URL") == ""  # on AWS, the services' own; env.json names the local one
        env = given(function.logical_id)
        queue, deployed_queue = urlsplit(env[DELAY_QUEUE_URL]), urlsplit(expected.pop(DELAY_QUEUE_URL))
        assert f"{queue.scheme}://{queue.netloc}" == ENDPOINT
        assert queue.path == deployed_queue.path  # /<account>/<queue name>
        assert {key: value for key, value in env.items() if key not in (DELAY_QUEUE_URL, "AWS_ENDPOINT_URL")} == (
            expected
        ), function.logical_id


# What SAM CLI itself makes of env.json (its own code, from .venv-sam, without Docker): the environment of each
# function of template.yaml, by logical id.
_SAM_RESOLVE = """
import json, sys
from samcli.commands.local.lib.local_lambda import LocalLambdaRunner
from samcli.lib.providers.sam_function_provider import SamFunctionProvider
from samcli.lib.providers.sam_stack_provider import SamLocalStackProvider

template, env_file = sys.argv[1], sys.argv[2]
stacks, _ = SamLocalStackProvider.get_stacks(template)
provider = SamFunctionProvider(stacks)
with open(env_file) as f:
    values = json.load(f)
runner = LocalLambdaRunner(None, provider, cwd=".", real_path=".", env_vars_values=values)
print(json.dumps({function.name: runner._make_env_vars(function).resolve() for function in provider.get_all()}))
"""


@pytest.fixture(scope="module")
def sam_resolved() -> dict[str, dict[str, str]]:
    if not SAM_PYTHON.exists():
        missing(f"{SAM_PYTHON.relative_to(ROOT)} is missing: run `make validate` first")
    environment = {"PATH": "/usr/bin:/bin", "AWS_ACCESS_KEY_ID": "local", "AWS_SECRET_ACCESS_KEY": "local"}
    done = subprocess.run(
        [str(SAM_PYTHON), "-c", _SAM_RESOLVE, str(TEMPLATE), str(ENV_FILE)],
        cwd=ROOT,
        env={**environment, "AWS_DEFAULT_REGION": "us-east-1", "SAM_CLI_TELEMETRY": "0"},
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    resolved: dict[str, dict[str, str]] = json.loads(done.stdout.strip().splitlines()[-1])
    return resolved


def test_sam_cli_gives_each_function_the_values_of_env_json(sam_resolved: dict[str, dict[str, str]]) -> None:
    assert set(sam_resolved) == set(declared())
    for logical_id, names in declared().items():
        wanted = given(logical_id)
        assert {name: sam_resolved[logical_id][name] for name in names} == {name: wanted[name] for name in names}


def test_sam_cli_points_each_function_at_the_local_endpoint(sam_resolved: dict[str, dict[str, str]]) -> None:
    pointed = {logical_id: env.get("AWS_ENDPOINT_URL") for logical_id, env in sam_resolved.items()}
    assert pointed == dict.fromkeys(declared(), ENDPOINT)
