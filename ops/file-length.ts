// `npm run lint`'s length rule: no source or test file past 450 lines unless its opening comment says
// why (a line containing "Longer than 450 lines:"). Long files are where copies and second concerns
// hide; the reason, when there is one, is written where the next reader looks first.
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";

const LIMIT = 450;
const files = execFileSync("git", ["ls-files", "--cached", "--others", "--exclude-standard", "*.ts", "*.tsx", "*.mjs", "*.cjs"], {
  encoding: "utf8",
})
  .split("\n")
  .filter((f) => f && !f.endsWith(".d.ts"));
const over = files.flatMap((file) => {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch {
    return []; // deleted in the working tree
  }
  const lines = text.split("\n").length;
  const head = text.split("\n").slice(0, 15).join("\n");
  return lines > LIMIT && !head.includes("Longer than 450 lines:")
    ? [`${file}: ${lines} lines (limit ${LIMIT}; split it, or say why at its top: "Longer than 450 lines: …")`]
    : [];
});
for (const line of over) console.error(line);
process.exitCode = over.length ? 1 : 0;
