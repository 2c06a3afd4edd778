/**
 * JSON text fields: parsed, checked against a schema, their errors listed under them, re-indented.
 */

import { h } from "./dom.js";
import { prettyJson } from "./format.js";
import { validateSchema } from "./schema.js";

/**
 * Read a JSON text field: `{empty: true}` when blank, `{value}` when it parses, `{error}` (with the line and
 * column when the browser says where) when it does not.
 * @param {string} text
 */
function parseJsonField(text) {
  if (!text.trim()) return { empty: true };
  try {
    return { value: JSON.parse(text) };
  } catch (error) {
    const position = /position (\d+)/.exec(error.message);
    let where = "";
    if (position) {
      const before = text.slice(0, Number(position[1]));
      const line = before.split("\n").length;
      const column = before.length - before.lastIndexOf("\n");
      where = ` (line ${line}, column ${column})`;
    }
    return { error: `Not valid JSON${where}: ${error.message}` };
  }
}

/**
 * Show `messages` under a field (its error list is named in its aria-describedby) and mark it invalid.
 * @param {HTMLElement} field
 * @param {HTMLElement} list the field's `<ul class="field-errors">`
 * @param {string[]} messages none: the field is valid
 */
export function showFieldErrors(field, list, messages) {
  list.replaceChildren(...messages.slice(0, 20).map((message) => h("li", {}, message)));
  if (messages.length > 20) list.append(h("li", {}, `…and ${messages.length - 20} more`));
  if (messages.length) field.setAttribute("aria-invalid", "true");
  else field.removeAttribute("aria-invalid");
}

/**
 * Check a JSON state field against a schema. Returns `{ok, state}` (state undefined when the field is
 * empty) and shows the errors under the field otherwise.
 * @param {HTMLTextAreaElement} field
 * @param {HTMLElement} list
 * @param {object|null} schema the pipeline's stateSchema ({} or null: any JSON)
 * @param {string} [name] how the messages name the value
 */
export function checkJsonField(field, list, schema, name = "state") {
  const parsed = parseJsonField(field.value);
  if (parsed.error) {
    showFieldErrors(field, list, [parsed.error]);
    return { ok: false };
  }
  if (parsed.empty) {
    showFieldErrors(field, list, []);
    return { ok: true, state: undefined };
  }
  const errors = schema && Object.keys(schema).length ? validateSchema(schema, parsed.value, name) : [];
  showFieldErrors(field, list, errors.map((error) => `${error.path} ${error.message}`));
  return { ok: errors.length === 0, state: parsed.value };
}

/** Re-indent a JSON text field when it parses (the "Format JSON" buttons). */
export function formatJsonField(field) {
  const parsed = parseJsonField(field.value);
  if (!parsed.error && !parsed.empty) field.value = prettyJson(parsed.value);
}
