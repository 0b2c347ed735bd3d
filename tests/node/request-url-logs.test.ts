// Issue 25, item 10: the mail intake's MAIL_PUSH_TOKEN travels in its URL (/api/webhooks/mail?token=…,
// the spec's), and Workers Logs would record that URL with every invocation. wrangler.toml keeps it out:
// the query string is redacted from every log line and trace (observability.redact_query_string), and no
// invocation log is written at all (observability.logs.invocation_logs = false: it would also hold the
// path, and /auth/link/<token> carries a sign-in token there); the Worker's own one-line request log
// names the route pattern instead (worker/app.ts). Read through wrangler's own config reader, so a key
// the installed wrangler does not know (and would only warn about, then drop) fails here.
import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { unstable_readConfig } from "wrangler";

describe("wrangler.toml's [observability] (issue 25, item 10)", () => {
  it("keeps Workers Logs on, redacts the query string of request URLs and writes no invocation logs", () => {
    const warnings: string[] = [];
    const warn = console.warn;
    console.warn = (...args: unknown[]) => warnings.push(args.join(" "));
    let config: ReturnType<typeof unstable_readConfig>;
    try {
      config = unstable_readConfig({ config: "wrangler.toml" }, { hideWarnings: false });
    } finally {
      console.warn = warn;
    }
    expect(warnings.join("\n")).not.toMatch(/observability|Unexpected fields/);
    expect(config.observability).toMatchObject({ enabled: true, redact_query_string: true, logs: { invocation_logs: false } });
    // The console lines themselves (worker/app.ts's request line, errors) stay recorded.
    expect(config.observability?.logs?.enabled ?? true).toBe(true);
  });

  it("are keys the installed wrangler's configuration schema defines", () => {
    const schema = readFileSync("node_modules/wrangler/config-schema.json", "utf8");
    expect(schema).toContain('"redact_query_string"');
    expect(schema).toContain('"invocation_logs"');
  });
});
