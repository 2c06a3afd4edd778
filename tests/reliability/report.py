"""Regenerate docs/RELIABILITY.md: run the proofs, collect their figures, and write each guarantee beside its test.

Run: ``make reliability`` (or ``python -m tests.reliability.report [--scale N] [--jobs N]``). It runs

- the crash and lost-response schedules (tests/contract/test_fault_schedules.py) at ``--scale``;
- the API fuzzing, the cross-owner reads and the corrupt-record suites, which write their counts
  into ``CAIRN_RELIABILITY_REPORT_DIR``;
- the chaos run (:mod:`tests.reliability.chaos`) with ``--jobs`` jobs and a fifth of DynamoDB, S3
  and Lambda calls failing;

then checks that every test the document cites exists, and writes the document.
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import logging
import os
import platform
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
DOCUMENT = ROOT / "docs" / "RELIABILITY.md"
FIGURES_DIRECTORY = "CAIRN_RELIABILITY_REPORT_DIR"


@dataclass(frozen=True)
class Guarantee:
    """One promise and the test that proves it."""

    area: str
    promise: str
    test: str  # a pytest node id, relative to the repository


_PROTOCOL = "Exactly once under crashes, lost responses, duplicates and races"
_FAULTS = "Transient AWS faults"
_INPUT = "Bad input gets a clear 4xx, never a 5xx, and changes nothing"
_STORED = "Corrupt or hostile stored data is contained"
_TTL = "Time to live: a job lives until its TTL after its last write, and its checkpoint with it"
_DEPLOY = "A deploy that works for every caller"

GUARANTEES: tuple[Guarantee, ...] = (
    Guarantee(
        _PROTOCOL,
        "A process death at any storage call, and any sequence of them, is recovered; each phase commits once",
        "tests/contract/test_fault_schedules.py::test_any_schedule_of_faults",
    ),
    Guarantee(
        _PROTOCOL,
        "Every single death or lost response at every call, with duplicate deliveries",
        "tests/contract/test_fault_schedules.py::test_every_single_fault_at_every_call",
    ),
    Guarantee(
        _PROTOCOL,
        "A DynamoDB write that lands but loses its response is recognised by its token, not redone",
        "tests/contract/test_fault_schedules.py::test_any_set_of_lost_aws_responses_with_deaths",
    ),
    Guarantee(
        _PROTOCOL,
        "A duplicate delivery runs the phase once",
        "tests/contract/test_claims_and_fencing.py::test_a_duplicate_delivery_runs_the_phase_once",
    ),
    Guarantee(
        _PROTOCOL,
        "A stale (late) advance does nothing",
        "tests/contract/test_claims_and_fencing.py::test_a_stale_advance_does_nothing",
    ),
    Guarantee(
        _PROTOCOL,
        "A worker that was taken over cannot commit",
        "tests/contract/test_claims_and_fencing.py::test_a_worker_that_was_taken_over_cannot_commit",
    ),
    Guarantee(
        _PROTOCOL,
        "Two workers claiming at once run the phase once",
        "tests/contract/test_concurrency.py::test_two_workers_claiming_at_once_run_the_phase_once",
    ),
    Guarantee(
        _PROTOCOL,
        "A resume racing a commit never puts the old checkpoint back",
        "tests/contract/test_resume_races.py::test_a_resume_racing_a_commit_does_not_put_the_old_checkpoint_back",
    ),
    Guarantee(
        _PROTOCOL,
        "A crash report delivered twice counts one crash",
        "tests/functional/test_protocol_cases.py::test_a_crash_report_delivered_twice_counts_one_crash",
    ),
    Guarantee(
        _PROTOCOL,
        "A duplicate event of a failed phase does not skip its retry backoff",
        "tests/functional/test_protocol_cases.py::test_a_duplicate_event_of_a_failed_phase_does_not_skip_its_retry_backoff",
    ),
    Guarantee(
        _FAULTS,
        "A fifth of DynamoDB, S3 and Lambda calls throttled, 5xx or with lost responses: every job completes, "
        "none redone",
        "tests/reliability/test_chaos.py::test_every_job_completes_once_when_a_fifth_of_aws_calls_fail",
    ),
    Guarantee(
        _FAULTS,
        "A throttled table still completes the job",
        "tests/functional/test_dynamodb_faults.py::test_a_throttled_table_still_completes_the_job",
    ),
    Guarantee(
        _INPUT,
        "A body the API cannot read (deep nesting, huge numbers, non-UTF-8, bad base64, multipart without "
        "boundary) is a 4xx and changes nothing",
        "tests/functional/test_api_bad_input.py::test_a_body_the_api_cannot_read_is_a_clear_4xx_and_changes_nothing",
    ),
    Guarantee(
        _INPUT,
        "A job id with a trailing newline never reaches the job",
        "tests/functional/test_api_bad_input.py::test_a_job_id_with_a_trailing_newline_in_the_path_is_400_and_never_reaches_the_job",
    ),
    Guarantee(
        _INPUT,
        "A megabyte pipeline name gets a short 400 (every quoted value is bounded)",
        "tests/functional/test_api_bad_input.py::test_a_megabyte_pipeline_name_gets_a_short_400",
    ),
    Guarantee(
        _INPUT,
        "An oversized state is a 413 before anything is written",
        "tests/functional/test_api_bad_input.py::test_a_state_over_the_input_limit_is_413_before_anything_is_written",
    ),
    Guarantee(
        _INPUT,
        "A damaged or forged cursor is a 400 or pages through the caller's own jobs only",
        "tests/functional/test_listing_shards.py::test_a_damaged_cursor_is_refused_or_pages_through_the_owners_own_jobs",
    ),
    Guarantee(
        _INPUT,
        "The OpenAPI document declares the job id rule the handler applies",
        "tests/functional/test_api_openapi.py::test_the_declared_job_id_rule_is_the_one_the_handler_applies",
    ),
    Guarantee(
        _INPUT,
        "Fuzzing the API from its OpenAPI document (positive and negative) never gets a 5xx",
        "tests/functional/test_api_fuzz.py::test_fuzzing_the_api_from_its_openapi_document_never_gets_a_5xx",
    ),
    Guarantee(
        _INPUT,
        "Another owner never reads or changes a caller's jobs",
        "tests/functional/test_api_fuzz.py::test_another_owner_never_reads_or_changes_a_callers_jobs",
    ),
    Guarantee(
        _STORED,
        "A damaged gzip value or S3 object is a CorruptJobError naming the job",
        "tests/functional/test_dynamodb_corrupt.py::test_a_corrupt_state_is_a_corrupt_job_error_naming_the_job",
    ),
    Guarantee(
        _STORED,
        "Any damage to a stored value reads as corrupt, never as a raw decoding error",
        "tests/functional/test_dynamodb_corrupt.py::test_any_damage_to_a_stored_gzip_value_reads_as_corrupt_or_as_the_value",
    ),
    Guarantee(
        _STORED,
        "The API lists an unreadable job as corrupt beside the others",
        "tests/functional/test_dynamodb_corrupt.py::test_the_api_lists_an_unreadable_job_as_corrupt_beside_the_others",
    ),
    Guarantee(
        _STORED,
        "The sweep skips an unreadable job and revives the others",
        "tests/functional/test_dynamodb_corrupt.py::test_the_sweep_skips_an_unreadable_job_and_revives_the_others",
    ),
    Guarantee(
        _STORED,
        "A damaged job file (deep nesting included) is named; listings, health and cleanup go on",
        "tests/contract/test_corrupt_files.py::test_every_damaged_job_file_is_named_and_the_other_jobs_stay_usable",
    ),
    Guarantee(
        _TTL,
        "A live job's checkpoint is kept however long ago it was saved, on every store",
        "tests/contract/test_ttl.py::test_a_live_jobs_checkpoint_is_kept_however_long_ago_it_was_saved",
    ),
    Guarantee(
        _TTL,
        "Once idle for the TTL a job is gone on every path",
        "tests/engine/test_ttl.py::test_once_the_job_has_been_idle_for_the_ttl_it_is_gone_on_every_path",
    ),
    Guarantee(
        _TTL,
        "The API and the sweep agree with the rule",
        "tests/functional/test_ttl_read_paths.py::test_the_api_shows_lists_and_resumes_a_live_job_whose_checkpoint_is_older_than_the_ttl",
    ),
    Guarantee(
        _TTL,
        "A job retrying for days keeps its log, phases, input and offloaded state",
        "tests/functional/test_ttl_side_items.py::test_a_job_retrying_for_days_keeps_its_log_phases_input_and_offloaded_state",
    ),
    Guarantee(
        _DEPLOY,
        "Two sessions of one role see the same jobs; another role does not",
        "tests/functional/test_owner_identity.py::test_two_sessions_of_one_role_see_the_same_jobs",
    ),
    Guarantee(
        _DEPLOY,
        "An Identity Center user with an e-mail session over 128 characters owns its jobs",
        "tests/functional/test_owner_identity.py::test_an_identity_center_user_with_an_email_session_over_128_characters_owns_its_jobs",
    ),
    Guarantee(
        _DEPLOY,
        "Health and the OpenAPI document are public at the gateway for every auth",
        "tests/template/test_functions.py::test_health_and_the_openapi_document_are_public_for_every_auth",
    ),
    Guarantee(
        _DEPLOY,
        "make builds for the architecture it deploys",
        "tests/template/test_build.py::test_make_builds_for_the_architecture_it_deploys",
    ),
    Guarantee(
        _DEPLOY,
        "Without a bucket a value fits its item or fails naming its size; never DynamoDB's item-size error",
        "tests/functional/test_item_size.py::test_without_a_bucket_a_value_either_fits_or_fails_the_phase_naming_its_size",
    ),
    Guarantee(
        _DEPLOY,
        "With a bucket, large parts go to S3 whenever the item would not fit",
        "tests/functional/test_item_size.py::test_with_a_bucket_large_parts_go_to_s3_whenever_the_item_would_not_fit",
    ),
    Guarantee(
        _DEPLOY,
        "fetch reads s3:// documents from the bucket the deployer names, and refuses others",
        "tests/functional/test_documents_bucket.py::test_fetch_refuses_a_bucket_the_deployment_does_not_name",
    ),
    Guarantee(
        _DEPLOY,
        "Forty self-loop iterations in one traced chain complete (RecursiveLoop: Allow)",
        "tests/functional/test_recursive_chain.py::test_forty_self_loop_iterations_in_one_chain_complete",
    ),
    Guarantee(
        _DEPLOY,
        "Without it, the 17th invocation is stopped (the local stack counts the chain as Lambda does)",
        "tests/functional/test_recursive_chain.py::test_without_recursive_loop_allow_the_seventeenth_invocation_is_stopped",
    ),
    Guarantee(
        _DEPLOY,
        "Paging returns every job once, newest first, across the listing shards",
        "tests/functional/test_listing_shards.py::test_paging_returns_every_job_once_newest_first",
    ),
    Guarantee(
        _DEPLOY,
        "A busy owner's jobs are spread over every shard",
        "tests/functional/test_listing_shards.py::test_a_busy_owners_jobs_are_spread_over_every_shard",
    ),
    Guarantee(
        _DEPLOY,
        "The sweep leaves a retry alone until its backoff is over",
        "tests/functional/test_listing_shards.py::test_the_sweep_leaves_a_retry_alone_until_its_backoff_is_over",
    ),
    Guarantee(
        _DEPLOY,
        "An alarm e-mail gets a topic every alarm notifies",
        "tests/template/test_alarms.py::test_an_alarm_email_gets_a_topic_with_its_subscription_that_every_alarm_notifies",
    ),
    Guarantee(
        _DEPLOY,
        "Every function is granted exactly what its code calls",
        "tests/template/test_iam.py::test_every_function_is_granted_exactly_what_its_code_calls",
    ),
    Guarantee(
        _DEPLOY,
        "No role can reach another stack's functions",
        "tests/template/test_iam.py::test_no_role_can_reach_another_stack",
    ),
)

#: The suites whose figures the document prints; each writes JSON into the figures directory.
FIGURE_SUITES = (
    "tests/contract/test_fault_schedules.py",
    "tests/functional/test_api_fuzz.py",
)


def _pytest(arguments: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *arguments]
    return subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, check=False)


def collected_tests(env: dict[str, str]) -> set[str]:
    """Every test node id in the suite."""
    listing = _pytest(["--collect-only"], env)
    return {line.split("[", 1)[0] for line in listing.stdout.splitlines() if "::" in line}


def run_suites(env: dict[str, str], suites: list[str]) -> str:
    """Run ``suites``; a failure stops the report (a document of figures from a failing run would lie)."""
    result = _pytest(suites, env)
    if result.returncode != 0:
        sys.stderr.write(result.stdout[-6000:] + result.stderr[-3000:])
        raise SystemExit(f"the proofs failed: {' '.join(suites)}")
    return result.stdout


def read_figures(directory: Path) -> dict[str, dict[str, Any]]:
    """Every ``<name>.json`` the suites wrote."""
    return {path.stem: json.loads(path.read_text()) for path in sorted(directory.glob("*.json"))}


def run_chaos_quietly(jobs: int, rate: float) -> dict[str, Any]:
    """The chaos run, with the functions' logs and metrics kept off the terminal."""
    os.environ.setdefault("POWERTOOLS_LOG_LEVEL", "ERROR")
    logging.getLogger("werkzeug").setLevel(logging.WARNING)
    from tests.aws import use_fake_credentials
    from tests.reliability.chaos import run_chaos

    use_fake_credentials()
    with contextlib.redirect_stdout(io.StringIO()):
        figures = run_chaos(jobs=jobs, rate=rate, seed=2026)
    return figures.as_dict()


def _row(*cells: object) -> str:
    return "| " + " | ".join(str(cell) for cell in cells) + " |"


def render(figures: dict[str, dict[str, Any]], chaos: dict[str, Any], scale: int) -> str:
    """The document."""
    schedules = figures.get("fault_schedules", {})
    fuzz = figures.get("api_fuzz", {})
    owners = figures.get("cross_owner", {})
    corrupt = figures.get("corrupt_records", {})
    faults = chaos["faults"]
    by_service = {
        service: sum(count for name, count in faults.items() if name.startswith(service))
        for service in ("dynamodb", "s3", "lambda")
    }
    lines = [
        "# Reliability",
        "",
        "What cairn guarantees, the test that proves each guarantee, and the figures of the last run.",
        "Regenerate with `make reliability` (it fails, and writes nothing, if any proof fails).",
        "",
        "## Figures of the last run",
        "",
        f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC, Python {platform.python_version()} on {platform.machine()}, "
        f"fault schedules at scale {scale}.",
        "",
        _row("What", "Figure"),
        _row("---", "---"),
        _row("Crash and lost-response schedules tried (DynamoDB and file stores)", schedules.get("durable", 0)),
        _row("Schedules tried in all (memory included)", schedules.get("total", 0)),
        _row("Crashes and lost responses injected by the schedules", schedules.get("faults", 0)),
        _row("Chaos run: jobs, all completed", f"{chaos['jobs']}, {chaos['completed']} completed"),
        _row(
            "Chaos run: faults injected (a fifth of calls throttled, 5xx or response lost)",
            f"{chaos['faults_injected']} (DynamoDB {by_service['dynamodb']}, S3 {by_service['s3']}, "
            f"Lambda {by_service['lambda']}) in {sum(chaos['calls'].values())} calls",
        ),
        _row("Chaos run: duplicate Lambda deliveries", chaos["duplicates_delivered"]),
        _row("Chaos run: phases redone after they committed", chaos["redone"]),
        _row("Chaos run: wrong results", chaos["wrong_results"]),
        _row("API requests fuzzed (positive and negative, from the OpenAPI document)", fuzz.get("requests", 0)),
        _row("API responses with a 5xx", fuzz.get("server_errors", 0)),
        _row(
            "Cross-owner reads attempted (succeeded)",
            f"{owners.get('attempts', 0)} ({owners.get('succeeded', 0)})",
        ),
        _row("Corrupt or hostile records tried", corrupt.get("tried", 0)),
        "",
        "## Guarantees and their proofs",
        "",
    ]
    area = None
    for guarantee in GUARANTEES:
        if guarantee.area != area:
            area = guarantee.area
            lines += ["", f"### {area}", "", _row("Guarantee", "Proof"), _row("---", "---")]
        lines.append(_row(guarantee.promise, f"`{guarantee.test}`"))
    return "\n".join(lines).replace("\n\n\n", "\n\n") + "\n"


def main(argv: list[str] | None = None) -> int:
    """Run the proofs and write docs/RELIABILITY.md."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", type=int, default=3, help="fault-schedule scale (make test runs 1)")
    parser.add_argument("--jobs", type=int, default=100, help="jobs in the chaos run")
    parser.add_argument("--rate", type=float, default=0.2, help="share of AWS calls that fail in the chaos run")
    arguments = parser.parse_args(argv)

    with tempfile.TemporaryDirectory() as directory:
        env = {**os.environ, FIGURES_DIRECTORY: directory, "CAIRN_PROOF_SCALE": str(arguments.scale)}
        env["PYTHONPATH"] = os.pathsep.join(["layers/cairn", "functions", "."])
        known = collected_tests(env)
        missing = [guarantee.test for guarantee in GUARANTEES if guarantee.test not in known]
        if missing:
            raise SystemExit("the document cites tests that do not exist: " + ", ".join(missing))
        cited_files = sorted({guarantee.test.split("::", 1)[0] for guarantee in GUARANTEES})
        print(f"running {len(cited_files) + len(FIGURE_SUITES)} suites (fault schedules at scale {arguments.scale})")
        run_suites(env, sorted({*FIGURE_SUITES, *cited_files}))
        figures = read_figures(Path(directory))
    print(f"chaos run: {arguments.jobs} jobs, {arguments.rate:.0%} of calls failing")
    chaos = run_chaos_quietly(arguments.jobs, arguments.rate)
    if chaos["completed"] != chaos["jobs"] or chaos["redone"] or chaos["wrong_results"]:
        raise SystemExit(f"the chaos run broke a guarantee: {json.dumps(chaos)}")
    DOCUMENT.write_text(render(figures, chaos, arguments.scale))
    print(f"wrote {DOCUMENT.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
