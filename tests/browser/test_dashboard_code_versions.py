"""Which code each phase run ran, in chromium: the timeline's rows give each run's code version, short, and
mark the run of a phase whose code changed since its previous run, as after a deploy mid-job.

The deploy is real: ``cairn dev --reload`` on a scratch project with the ``gated`` pipeline
(tests/local/gated_pipeline.py); a ``check`` fails on the code as it was, the pipeline's file changes (the
server retires its workers: the next invocations import the new code, whose hash is another version), and
the retried ``check`` and the ``finish`` after it run the new code.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Page, expect

from tests.browser.dashboard import SAFETY_S, failed_job, open_job
from tests.local.devstack import DevStack, dev_stack, scratch_project

pytestmark = pytest.mark.xdist_group("browser-2")

JOB = "redeployed"


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A copy of the bundle with the ``gated`` pipeline, whose code the test changes."""
    return scratch_project(tmp_path_factory.mktemp("code-versions"), ("gated",))


@pytest.fixture(scope="module")
def reloading_stack(project: Path) -> Iterator[DevStack]:
    """``cairn dev --driver direct --reload`` on the project: a change to its code reaches the next invocation."""
    with dev_stack(project / "dev.log", "--driver", "direct", "--reload", cwd=project) as stack:
        yield stack


def deploy(stack: DevStack, project: Path) -> None:
    """Change the ``gated`` pipeline's code (a comment: its hash changes) and wait until the server reloads."""
    module = project / "functions" / "gated" / "pipeline.py"
    module.write_text(module.read_text() + "\n# Deployed again: the same phases, another version of their code.\n")
    deadline = time.monotonic() + SAFETY_S
    while "code changed" not in stack.output():
        assert time.monotonic() < deadline, stack.output()[-2000:]
        time.sleep(0.2)


def short(version: str) -> str:
    """What the dashboard shows of a version ``sha256:<12 hex>``: its hex digits."""
    assert re.fullmatch(r"sha256:[0-9a-f]{12}", version), version
    return version.removeprefix("sha256:")


def test_each_run_shows_its_code_and_the_run_after_a_deploy_is_marked_changed(
    browser_page: Page, reloading_stack: DevStack, project: Path, tmp_path: Path
) -> None:
    gate = failed_job(reloading_stack, tmp_path, JOB)
    deploy(reloading_stack, project)
    gate.write_text("open")
    reloading_stack.api.retry(JOB)
    view = reloading_stack.wait_for(JOB)
    assert view["status"] == "complete", view
    ran = [(record["phase"], record["codeVersion"]) for record in reloading_stack.phases(JOB)]
    assert [phase for phase, _ in ran] == ["gather", "check", "check", "finish"]
    before, after = ran[0][1], ran[-1][1]
    assert before != after  # the deploy gave the phases' code another version
    assert ran == [("gather", before), ("check", before), ("check", after), ("finish", after)]

    open_job(browser_page, reloading_stack.base_url, JOB)

    rows = browser_page.get_by_role("region", name="Timeline").locator(".timeline-row")
    expect(rows).to_have_count(4)
    for row, (_, version) in zip((rows.nth(index) for index in range(4)), ran, strict=True):
        expect(row.locator(".code-version")).to_have_text(re.compile(rf"^code {short(version)}"))
        expect(row).to_have_attribute("title", re.compile(rf"code {re.escape(version)}"))
    # only the retried check ran other code than its phase's run before (finish's first run has none before it)
    expect(rows.locator(".code-changed")).to_have_count(1)
    changed = rows.nth(2)
    expect(changed.locator(".code-changed")).to_have_text("changed")
    expect(changed.locator(".code-version")).to_have_text(f"code {short(after)}changed")
    expect(changed).to_have_attribute(
        "title", re.compile(rf"code {re.escape(after)} \(changed from {re.escape(before)}\)")
    )
    expect(rows.nth(1)).not_to_have_attribute("title", re.compile("changed from"))
