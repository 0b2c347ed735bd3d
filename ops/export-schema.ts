// `npx tsx ops/export-schema.ts`: writes docs/export/soma-export-v1.schema.json from the format's zod
// schema (db/export-format.ts), the one definition of the export file. tests/worker/export-import.test.ts
// fails while the committed file differs from what this writes.
import { mkdirSync, writeFileSync } from "node:fs";
import { exportJsonSchema } from "../db/export-format";
import { root } from "./cli";

const path = `${root}docs/export/soma-export-v1.schema.json`;
mkdirSync(`${root}docs/export`, { recursive: true });
writeFileSync(path, `${JSON.stringify(exportJsonSchema(), null, 2)}\n`);
console.log(`wrote ${path}`);
