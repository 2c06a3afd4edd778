"""Lambda handler of the API function: start, watch, retry, pause and cancel jobs over HTTP."""

from __future__ import annotations

from cairn.aws.api import api_handler
from pipelines import PIPELINES

handler = api_handler(PIPELINES)
