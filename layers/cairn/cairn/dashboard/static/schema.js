/**
 * JSON schema validation, the subset pydantic emits: the state is checked before it is sent (the API
 * checks again; this catches mistakes while they are being typed).
 */

const TYPE_NAMES = {
  string: "a string",
  integer: "an integer",
  number: "a number",
  boolean: "true or false",
  null: "null",
  object: "an object",
  array: "an array",
};

/** Whether `value` is of the JSON schema type `type`. */
function isOfType(value, type) {
  switch (type) {
    case "string":
      return typeof value === "string";
    case "integer":
      return typeof value === "number" && Number.isInteger(value);
    case "number":
      return typeof value === "number" && Number.isFinite(value);
    case "boolean":
      return typeof value === "boolean";
    case "null":
      return value === null;
    case "object":
      return value !== null && typeof value === "object" && !Array.isArray(value);
    case "array":
      return Array.isArray(value);
    default:
      return true;
  }
}

/** Deep equality of JSON values. */
export function jsonEqual(a, b) {
  if (a === b) return true;
  if (typeof a !== typeof b || a === null || b === null || typeof a !== "object") return false;
  if (Array.isArray(a) !== Array.isArray(b)) return false;
  const keys = Object.keys(a);
  if (keys.length !== Object.keys(b).length) return false;
  return keys.every((key) => Object.hasOwn(b, key) && jsonEqual(a[key], b[key]));
}

/** The schema a local `$ref` (`#/$defs/Name`, any JSON pointer into the root) points at; null if none. */
function resolveRef(root, ref) {
  if (typeof ref !== "string" || !ref.startsWith("#")) return null;
  const parts = ref.slice(1).split("/").filter(Boolean);
  let target = root;
  for (const part of parts) {
    const key = decodeURIComponent(part).replaceAll("~1", "/").replaceAll("~0", "~");
    if (target == null || typeof target !== "object" || !Object.hasOwn(target, key)) return null;
    target = target[key];
  }
  return target;
}

/** A path in the state, as people read it: `state.results[0].page`. */
function childPath(path, key) {
  if (typeof key === "number") return `${path}[${key}]`;
  return /^[A-Za-z_$][\w$]*$/.test(key) ? `${path}.${key}` : `${path}[${JSON.stringify(key)}]`;
}

/** A pattern as a JS RegExp (Python and JS agree on what pydantic emits); null when JS cannot read it. */
function schemaPattern(pattern) {
  try {
    return new RegExp(pattern, "u");
  } catch {
    try {
      return new RegExp(pattern);
    } catch {
      return null;
    }
  }
}

/**
 * Check `value` against a JSON schema: type, enum, const, $ref/$defs, anyOf/oneOf/allOf, properties,
 * required, additionalProperties (false or a schema), items, prefixItems, min/max (exclusive too),
 * multipleOf, minLength/maxLength, pattern, minItems/maxItems, uniqueItems, minProperties/maxProperties.
 * Unknown keywords (format, title, default...) are ignored: the API checks again, this catches mistakes early.
 * @param {object|boolean} schema
 * @param {any} value
 * @param {string} [rootName] how the errors name the value itself
 * @returns {{path: string, message: string}[]} the errors; empty when `value` is valid
 */
export function validateSchema(schema, value, rootName = "state") {
  const errors = [];
  checkSchema(schema, value, rootName, schema, errors, 0);
  return errors.map(({ path, message }) => ({ path, message }));
}

function checkSchema(schema, value, path, root, errors, depth) {
  if (schema === true || schema == null || typeof schema !== "object") {
    if (schema === false) errors.push({ path, message: "is not allowed here", kind: "type" });
    return;
  }
  if (depth > 64) return; // a recursive model: what a JSON value this deep can reach is the API's to check
  const fail = (message, kind = "value") => errors.push({ path, message, kind });

  if (schema.$ref) {
    const target = resolveRef(root, schema.$ref);
    if (target != null) checkSchema(target, value, path, root, errors, depth + 1);
  }
  for (const part of schema.allOf ?? []) checkSchema(part, value, path, root, errors, depth + 1);
  if (Array.isArray(schema.anyOf)) checkAlternatives(schema.anyOf, value, path, root, errors, depth, false);
  if (Array.isArray(schema.oneOf)) checkAlternatives(schema.oneOf, value, path, root, errors, depth, true);

  if (Object.hasOwn(schema, "const") && !jsonEqual(value, schema.const)) {
    fail(`must be ${JSON.stringify(schema.const)}`);
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((option) => jsonEqual(option, value))) {
    fail(`must be one of ${schema.enum.map((option) => JSON.stringify(option)).join(", ")}`);
  }
  if (schema.type != null) {
    const types = Array.isArray(schema.type) ? schema.type : [schema.type];
    if (!types.some((type) => isOfType(value, type))) {
      fail(`must be ${types.map((type) => TYPE_NAMES[type] ?? type).join(" or ")}`, "type");
      return;
    }
  }
  if (typeof value === "number") checkNumber(schema, value, fail);
  else if (typeof value === "string") checkString(schema, value, fail);
  else if (Array.isArray(value)) checkArray(schema, value, path, root, errors, depth, fail);
  else if (value !== null && typeof value === "object") checkObject(schema, value, path, root, errors, depth, fail);
}

/** anyOf (at least one alternative) or oneOf (exactly one): explain with the closest alternative's errors. */
function checkAlternatives(options, value, path, root, errors, depth, exactlyOne) {
  const results = options.map((option) => {
    const found = [];
    checkSchema(option, value, path, root, found, depth + 1);
    return found;
  });
  const passing = results.filter((found) => found.length === 0).length;
  if (exactlyOne ? passing === 1 : passing > 0) return;
  if (exactlyOne && passing > 1) {
    errors.push({ path, message: "matches more than one of the allowed forms", kind: "value" });
    return;
  }
  const wrongType = (found) => found.length === 1 && found[0].kind === "type" && found[0].path === path;
  const closer = results.filter((found) => !wrongType(found));
  if (closer.length === 0) {
    const wanted = [...new Set(results.map((found) => found[0].message.replace(/^must be /, "")))];
    errors.push({ path, message: `must be ${wanted.join(" or ")}`, kind: "type" });
    return;
  }
  errors.push(...closer.reduce((best, found) => (found.length < best.length ? found : best)));
}

function checkNumber(schema, value, fail) {
  if (typeof schema.minimum === "number" && value < schema.minimum) fail(`must be at least ${schema.minimum}`);
  if (typeof schema.maximum === "number" && value > schema.maximum) fail(`must be at most ${schema.maximum}`);
  if (typeof schema.exclusiveMinimum === "number" && value <= schema.exclusiveMinimum) {
    fail(`must be more than ${schema.exclusiveMinimum}`);
  }
  if (typeof schema.exclusiveMaximum === "number" && value >= schema.exclusiveMaximum) {
    fail(`must be less than ${schema.exclusiveMaximum}`);
  }
  if (typeof schema.multipleOf === "number" && schema.multipleOf > 0) {
    const ratio = value / schema.multipleOf;
    if (Math.abs(ratio - Math.round(ratio)) > 1e-9) fail(`must be a multiple of ${schema.multipleOf}`);
  }
}

function checkString(schema, value, fail) {
  const length = [...value].length;
  if (typeof schema.minLength === "number" && length < schema.minLength) {
    fail(`must have at least ${schema.minLength} character${schema.minLength === 1 ? "" : "s"}`);
  }
  if (typeof schema.maxLength === "number" && length > schema.maxLength) {
    fail(`must have at most ${schema.maxLength} characters`);
  }
  if (typeof schema.pattern === "string") {
    const pattern = schemaPattern(schema.pattern);
    if (pattern && !pattern.test(value)) fail(`must match the pattern ${schema.pattern}`);
  }
}

function checkArray(schema, value, path, root, errors, depth, fail) {
  if (typeof schema.minItems === "number" && value.length < schema.minItems) {
    fail(`must have at least ${schema.minItems} item${schema.minItems === 1 ? "" : "s"}`);
  }
  if (typeof schema.maxItems === "number" && value.length > schema.maxItems) {
    fail(`must have at most ${schema.maxItems} items`);
  }
  const prefix = Array.isArray(schema.prefixItems) ? schema.prefixItems : [];
  value.forEach((item, index) => {
    const itemSchema = index < prefix.length ? prefix[index] : schema.items;
    if (itemSchema === false) fail(`must have at most ${prefix.length} items`);
    else if (itemSchema != null) checkSchema(itemSchema, item, childPath(path, index), root, errors, depth + 1);
  });
  if (schema.uniqueItems === true) {
    const repeated = value.findIndex((item, index) => value.slice(0, index).some((seen) => jsonEqual(seen, item)));
    if (repeated >= 0) fail(`must not repeat an item (item ${repeated} repeats an earlier one)`);
  }
}

function checkObject(schema, value, path, root, errors, depth, fail) {
  const properties = schema.properties ?? {};
  for (const name of schema.required ?? []) {
    if (!Object.hasOwn(value, name)) {
      errors.push({ path: childPath(path, name), message: "is required", kind: "value" });
    }
  }
  const patterns = Object.entries(schema.patternProperties ?? {})
    .map(([pattern, patternSchema]) => [schemaPattern(pattern), patternSchema])
    .filter(([pattern]) => pattern);
  for (const [name, item] of Object.entries(value)) {
    const where = childPath(path, name);
    if (Object.hasOwn(properties, name)) {
      checkSchema(properties[name], item, where, root, errors, depth + 1);
      continue;
    }
    const matching = patterns.filter(([pattern]) => pattern.test(name));
    for (const [, patternSchema] of matching) checkSchema(patternSchema, item, where, root, errors, depth + 1);
    if (matching.length > 0) continue;
    if (schema.additionalProperties === false) {
      const known = Object.keys(properties);
      const hint = known.length ? ` (known: ${known.join(", ")})` : "";
      errors.push({ path: where, message: `is not a known field${hint}`, kind: "value" });
    } else if (schema.additionalProperties && typeof schema.additionalProperties === "object") {
      checkSchema(schema.additionalProperties, item, where, root, errors, depth + 1);
    }
  }
  const count = Object.keys(value).length;
  if (typeof schema.minProperties === "number" && count < schema.minProperties) {
    fail(`must have at least ${schema.minProperties} fields`);
  }
  if (typeof schema.maxProperties === "number" && count > schema.maxProperties) {
    fail(`must have at most ${schema.maxProperties} fields`);
  }
}

/** A value of the schema's shape to start typing from: its example or default, else an empty value of its type. */
export function templateFor(schema, root = schema, depth = 0) {
  if (!schema || typeof schema !== "object" || depth > 8) return null;
  if (schema.$ref) return templateFor(resolveRef(root, schema.$ref), root, depth + 1);
  if (Array.isArray(schema.examples) && schema.examples.length) return schema.examples[0];
  if ("default" in schema) return schema.default;
  if ("const" in schema) return schema.const;
  if (Array.isArray(schema.enum) && schema.enum.length) return schema.enum[0];
  const choice = schema.anyOf ?? schema.oneOf ?? schema.allOf;
  if (Array.isArray(choice) && choice.length) return templateFor(choice[0], root, depth + 1);
  const type = Array.isArray(schema.type) ? schema.type[0] : schema.type;
  if (type === "object" || schema.properties) {
    const value = {};
    for (const [key, child] of Object.entries(schema.properties ?? {})) value[key] = templateFor(child, root, depth + 1);
    return value;
  }
  return { array: [], string: "", integer: 0, number: 0, boolean: false }[type] ?? null;
}
