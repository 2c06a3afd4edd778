/**
 * The start view (`#/new`): a pipeline, an optional job id and the initial state, checked against
 * the pipeline's schema; a started job opens in its own view.
 */

import { announce, clearAlert, reportError } from "./alerts.js";
import { api, loadPipelines } from "./api.js";
import { $, h, heading } from "./dom.js";
import { checkJsonField, formatJsonField, showFieldErrors } from "./fields.js";
import { prettyJson } from "./format.js";
import { JOB_ID_PATTERN } from "./ids.js";

const JOB_ID_RULE = "A job id is 1-128 letters, digits, '.', '_' or '-', starting with a letter or digit.";

/**
 * Start a job: pick a pipeline, optionally name the job, edit its initial state as JSON (prefilled with
 * the pipeline's sample, checked against its state schema); on success go to the new job's view.
 * @param {HTMLElement} main
 * @param {{params: URLSearchParams}} route `?pipeline=NAME` preselects one
 */
export function newJobView(main, route) {
  let pipelines = [];
  let stopped = false;
  const form = h("form", { class: "start-form panel", novalidate: true });
  main.append(heading("Start a job"), form);
  form.append(h("p", { class: "muted" }, "Loading the pipelines…"));

  loadPipelines()
    .then((found) => {
      pipelines = found;
      if (!stopped) buildForm(form, pipelines, route.params.get("pipeline"));
    })
    .catch((error) => {
      reportError(error);
      if (!stopped) buildForm(form, pipelines, route.params.get("pipeline"));
    });

  return {
    stop: () => {
      stopped = true;
    },
  };
}

/**
 * The form's state: the pipelines offered, the form and its fields (startFields), and whether it was submitted
 * (from then on every change is checked again).
 * @typedef {{form: HTMLFormElement, pipelines: object[], fields: object, submitted: boolean}} StartForm
 */

/**
 * Fill `form` with the fields for `pipelines` (a text field when the API lists none), `wanted` chosen if given,
 * and start the job on submit.
 */
function buildForm(form, pipelines, wanted) {
  const start = { form, pipelines, fields: startFields(pipelines), submitted: false };
  const { pipelineField, stateField, jobIdField } = start.fields;
  form.replaceChildren(...formRows(start));
  if (pipelines.length === 0) {
    const note = "The API lists no pipelines (GET /pipelines): type the pipeline's name.";
    form.prepend(h("p", { class: "muted" }, note));
  }
  pipelineField.addEventListener("change", () => choose(start));
  stateField.addEventListener("input", () => start.submitted && validate(start));
  jobIdField.addEventListener("input", () => start.submitted && validate(start));
  form.addEventListener("submit", (event) => submitForm(start, event));
  if (wanted) pipelineField.value = wanted;
  if (!pipelineField.value && pipelines.length) pipelineField.value = pipelines[0].name;
  choose(start);
}

/** The form's fields, their hints and error lists, the schema's `<pre>` and the submit button. */
function startFields(pipelines) {
  const pipelineField = pipelines.length
    ? h(
        "select",
        { id: "new-pipeline", name: "pipeline", required: true },
        pipelines.map((pipeline) => h("option", { value: pipeline.name }, pipeline.name)),
      )
    : h("input", { id: "new-pipeline", name: "pipeline", type: "text", required: true, autocomplete: "off" });
  const pipelineErrors = h("ul", { class: "field-errors", id: "new-pipeline-errors" });
  pipelineField.setAttribute("aria-describedby", "new-pipeline-hint new-pipeline-errors");
  return {
    pipelineField,
    pipelineErrors,
    phasesHint: h("p", { class: "hint", id: "new-pipeline-hint" }),
    jobIdField: h("input", {
      id: "new-job-id",
      name: "jobId",
      type: "text",
      autocomplete: "off",
      spellcheck: "false",
      autocapitalize: "off",
      maxlength: "128",
      "aria-describedby": "new-job-id-hint new-job-id-errors",
    }),
    jobIdErrors: h("ul", { class: "field-errors", id: "new-job-id-errors" }),
    stateField: h("textarea", {
      id: "new-state",
      name: "state",
      rows: "14",
      spellcheck: "false",
      autocapitalize: "off",
      autocomplete: "off",
      "aria-describedby": "new-state-hint new-state-errors",
    }),
    stateErrors: h("ul", { class: "field-errors", id: "new-state-errors" }),
    stateHint: h("p", { class: "hint", id: "new-state-hint" }),
    schemaPre: h("pre", { class: "json", tabindex: "0" }),
    submit: h("button", { type: "submit", class: "primary" }, "Start job"),
  };
}

/** The form's rows: pipeline, job id, initial state (with Format JSON and Use the sample), schema, submit. */
function formRows(start) {
  const fields = start.fields;
  return [
    h(
      "div",
      { class: "field" },
      h("label", { for: "new-pipeline" }, "Pipeline"),
      fields.pipelineField,
      fields.phasesHint,
      fields.pipelineErrors,
    ),
    h(
      "div",
      { class: "field" },
      h("label", { for: "new-job-id" }, "Job id (optional)"),
      fields.jobIdField,
      h(
        "p",
        { class: "hint", id: "new-job-id-hint" },
        "Leave it empty for a new UUID. 1-128 letters, digits, '.', '_' or '-'.",
      ),
      fields.jobIdErrors,
    ),
    h(
      "div",
      { class: "field" },
      h("label", { for: "new-state" }, "Initial state (JSON)"),
      fields.stateHint,
      fields.stateField,
      fields.stateErrors,
      h(
        "div",
        { class: "row" },
        h("button", { type: "button", class: "quiet small", onclick: () => formatJsonField(fields.stateField) }, "Format JSON"),
        h("button", { type: "button", class: "quiet small", onclick: () => useSample(start) }, "Use the sample"),
      ),
    ),
    h("details", { class: "schema" }, h("summary", {}, "State schema"), fields.schemaPre),
    h("div", { class: "form-actions" }, fields.submit),
  ];
}

/** The pipeline chosen in the form, or null (a name the API does not list). */
function chosen(start) {
  return start.pipelines.find((pipeline) => pipeline.name === start.fields.pipelineField.value) ?? null;
}

/** Show the chosen pipeline's phases, schema and sample. */
function choose(start) {
  const { phasesHint, schemaPre, stateField, stateHint, stateErrors } = start.fields;
  const pipeline = chosen(start);
  phasesHint.textContent = pipeline
    ? `Phases: ${pipeline.phases.join(" → ") || "none"}`
    : "The name of a pipeline this API runs.";
  const schema = pipeline?.stateSchema ?? {};
  schemaPre.textContent = Object.keys(schema).length
    ? prettyJson(schema)
    : "Any JSON (the pipeline declares no state model).";
  stateField.value = sampleText(pipeline);
  stateHint.textContent = pipeline?.sample != null
    ? "Prefilled with the pipeline's sample. Leave it empty to start from the pipeline's empty state."
    : "Leave it empty to start from the pipeline's empty state.";
  showFieldErrors(stateField, stateErrors, []);
}

/** Put the chosen pipeline's sample in the state field again. */
function useSample(start) {
  start.fields.stateField.value = sampleText(chosen(start));
  if (start.submitted) validate(start);
}

/** Check every field; show the errors under each. */
function validate(start) {
  const { pipelineField, pipelineErrors, jobIdField, jobIdErrors, stateField, stateErrors } = start.fields;
  const pipelineName = pipelineField.value.trim();
  showFieldErrors(pipelineField, pipelineErrors, pipelineName ? [] : ["Choose a pipeline."]);
  const jobId = jobIdField.value.trim();
  const jobIdOk = !jobId || JOB_ID_PATTERN.test(jobId);
  showFieldErrors(jobIdField, jobIdErrors, jobIdOk ? [] : [JOB_ID_RULE]);
  const checked = checkJsonField(stateField, stateErrors, chosen(start)?.stateSchema ?? null);
  const fields = [pipelineField, jobIdField, stateField];
  const firstBad = fields.find((field) => field.getAttribute("aria-invalid") === "true");
  return { ok: !firstBad, firstBad, pipelineName, jobId, state: checked.state };
}

/** Check the form and start the job; a started job opens in its view, one that exists already is linked. */
async function submitForm(start, event) {
  const { form } = start;
  const { submit } = start.fields;
  event.preventDefault();
  start.submitted = true;
  const checked = validate(start);
  if (!checked.ok) {
    checked.firstBad.focus();
    return;
  }
  const body = { pipeline: checked.pipelineName };
  if (checked.jobId) body.jobId = checked.jobId;
  if (checked.state !== undefined) body.state = checked.state;
  submit.disabled = true;
  form.setAttribute("aria-busy", "true");
  clearAlert();
  $(".note", form)?.remove();
  try {
    const job = await api("jobs", { method: "POST", body });
    announce(`Job ${job.jobId} started.`);
    location.hash = `#/jobs/${encodeURIComponent(job.jobId)}`;
  } catch (error) {
    reportError(error);
    const existing = error?.body?.job?.jobId;
    if (existing) {
      const link = h("a", { href: `#/jobs/${encodeURIComponent(existing)}` }, `see job ${existing}`);
      form.append(h("p", { class: "note" }, "That job already exists: ", link, "."));
    }
  } finally {
    submit.disabled = false;
    form.removeAttribute("aria-busy");
  }
}

/** The text a pipeline's state field starts with: its sample, else `{}` for an object state, else empty. */
function sampleText(pipeline) {
  if (pipeline?.sample != null) return prettyJson(pipeline.sample);
  return pipeline?.stateSchema?.type === "object" ? "{}" : "";
}
