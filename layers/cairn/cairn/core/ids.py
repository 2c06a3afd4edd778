"""What a job id and an owner may be: the one home of both rules (the API's patterns come from here)."""

from __future__ import annotations

import re

from .errors import InvalidInputError
from .text import shown

JOB_ID_FIRST = "A-Za-z0-9"
"""The characters a job id may start with (a regex class's inside)."""
JOB_ID_CHARACTERS = "A-Za-z0-9._-"
"""The characters a job id may hold after its first (a regex class's inside)."""
JOB_ID_PATTERN = re.compile(rf"^[{JOB_ID_FIRST}][{JOB_ID_CHARACTERS}]{{0,127}}$")
JOB_ID_PREFIX_PATTERN = re.compile(rf"^[{JOB_ID_FIRST}][{JOB_ID_CHARACTERS}]*$")
"""What a job id may start with, any length (a listing's ``idPrefix``)."""
OWNER_PATTERN = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._:@|/+=-]{0,127}$")


def validate_job_id(job_id: str) -> str:
    """The job id, if it is 1-128 letters, digits, '.', '_' or '-'; else a clear error."""
    if not isinstance(job_id, str) or not JOB_ID_PATTERN.fullmatch(job_id):
        raise InvalidInputError(
            f"Invalid job id '{shown(job_id)}': use 1-128 letters, digits, '.', '_' or '-', "
            "starting with a letter or digit"
            if isinstance(job_id, str)
            else f"Invalid job id of type {type(job_id).__name__}: it must be a string"
        )
    return job_id


def validate_owner(owner: str) -> str:
    """The owner, if it is a non-empty id without '#'; else a clear error."""
    if not isinstance(owner, str) or not OWNER_PATTERN.fullmatch(owner):
        what = f"'{shown(owner)}'" if isinstance(owner, str) else type(owner).__name__
        raise InvalidInputError(f"Invalid owner {what}: use 1-128 letters, digits or ._:@|/+=- (no '#')")
    return owner
