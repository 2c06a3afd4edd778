/**
 * What a job id may be: the API's rule (cairn.core.ids.JOB_ID_PATTERN, its one home; tests/unit/test_ids.py checks
 * that this copy says the same). A prefix of an id follows it too.
 */

export const JOB_ID_PATTERN = /^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$/;
