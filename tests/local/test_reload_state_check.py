"""``cairn dev``'s reload refuses a state model changed in a way a saved state may not survive, with the message of
``cairn template check``, and keeps serving the code it loaded; a change that fits is reloaded as before."""

from __future__ import annotations

import time
from pathlib import Path

from tests.local.devstack import HUNG, DevStack, cairn, dev_stack

RESULTS = "    results: list[str] = Field(default_factory=list)\n"


def logged(stack: DevStack, text: str) -> str:
    """The server's output once it holds ``text``; fails the test after the safety net."""
    deadline = time.monotonic() + HUNG
    while time.monotonic() < deadline:
        output = stack.output()
        if text in output:
            return output
        time.sleep(0.1)
    raise AssertionError(f"cairn dev never printed {text!r}:\n{stack.output()[-3000:]}")


def test_a_change_a_saved_state_may_not_survive_is_not_reloaded_until_it_fits(tmp_path: Path) -> None:
    created = cairn("init", "shop", cwd=tmp_path)
    assert created.returncode == 0, created.stderr
    bundle = tmp_path / "shop"
    built = cairn("template", "check", "--states", "--seal", cwd=bundle)  # as the first sam build fixes it
    assert built.returncode == 0, built.stderr
    module = bundle / "functions" / "example" / "pipeline.py"
    original = module.read_text(encoding="utf-8")

    with dev_stack(tmp_path / "dev.log", "--reload", cwd=bundle) as stack:
        stack.api.start("example", state={"items": ["a"]}, job_id="before")
        assert stack.wait_for("before")["status"] == "complete"

        module.write_text(original.replace(RESULTS, RESULTS.replace("results", "outputs")), encoding="utf-8")
        output = logged(stack, "but not reloaded")
        refusal = (
            'template.yaml: pipeline "example": state field "results": removed (or renamed) since state-schemas.json '
            "recorded state_version 1: bump state_version and add a migration"
        )
        output = logged(stack, refusal)
        assert "the next invocations run the new code" not in output

        stack.api.start("example", state={"items": ["b", "c"]}, job_id="during")
        during = stack.wait_for("during")
        assert during["status"] == "complete", during  # the code loaded before the change
        assert during["result"] == {"results": ["B", "C"]}

        module.write_text(original.replace("item.strip().upper()", "item.strip().lower()"), encoding="utf-8")
        logged(stack, "the next invocations run the new code")
        stack.api.start("example", state={"items": ["D"]}, job_id="after")
        after = stack.wait_for("after")

    assert after["status"] == "complete", after
    assert after["result"] == {"results": ["d"]}
