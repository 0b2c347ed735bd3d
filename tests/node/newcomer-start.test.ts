// Guards issue 26's quiet start: `npm start` with nothing set — no .env, no AI settings, no network —
// prints one clear banner (the address, how to sign in, where the database's files are with no password,
// which model and how to change it) and no stack trace or warning a newcomer cannot act on; the web
// build prints nothing either; the README's "Try it" curl lines work against it as written; and every row
// of the offline model's phrasings (docs/offline-model.md) is answered as the table says.
import { spawn } from "node:child_process";
import { mkdtempSync, readFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { stripVTControlCharacters } from "node:util";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "./helpers";
import { ROOT, runCommand } from "./service-process";
import { waitFor } from "./wait";

const plain = (text: string) => stripVTControlCharacters(text);

/** The words of a reply in an AI SDK UI message stream (server-sent events). */
function replyOf(stream: string): string {
  return stream
    .split("\n")
    .filter((line) => line.startsWith("data: {"))
    .map((line) => JSON.parse(line.slice("data: ".length)) as { type: string; delta?: string })
    .filter((chunk) => chunk.type === "text-delta")
    .map((chunk) => chunk.delta)
    .join("");
}
const stops: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const stop of stops) await stop();
});

/** `tsx ops/start.ts` (what `npm start` runs after the web build) with only what any shell has set. */
async function startAsNewcomer() {
  const port = await freePort();
  const stateDir = mkdtempSync(`${tmpdir()}/soma-newcomer-`);
  let output = "";
  const child = spawn(`${ROOT}node_modules/.bin/tsx`, ["ops/start.ts"], {
    cwd: ROOT,
    detached: true,
    stdio: ["ignore", "pipe", "pipe"],
    // Nothing of the test run's own environment: a fresh shell's PATH and HOME, the port and a fresh state.
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", PORT: String(port), SOMA_STATE_DIR: stateDir },
  });
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<void>((resolve) => child.once("exit", () => resolve()));
  const stop = async () => {
    try {
      process.kill(-child.pid!, "SIGINT");
    } catch {
      return;
    }
    await Promise.race([exited, new Promise((resolve) => setTimeout(resolve, 15_000))]);
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // all gone
    }
  };
  stops.push(stop);
  await waitFor(() => plain(output).includes("Ctrl-C"), 90_000, "the banner");
  return { url: `http://127.0.0.1:${port}`, output: () => plain(output), stateDir, stop };
}

describe("a newcomer's npm start", () => {
  it("prints one banner, no stack trace, no warning, no password; and the README's curl lines work", { timeout: 180_000 }, async () => {
    const soma = await startAsNewcomer();
    const printed = soma.output();
    const url = soma.url;
    expect(printed.trim().split("\n")).toEqual([
      `Soma is running at ${url}`,
      `  sign in   ${url}/login ("Sign in as the developer")`,
      `  database  embedded Postgres (PGlite with pgvector and pg_trgm), its files in ${soma.stateDir}/pgdata`,
      "  model     offline: built in, deterministic, no network. For a real model: AI_PROVIDER=openai-compatible AI_BASE_URL=… AI_MODEL=… (README, Try it)",
      "  workflows none running: Soma delivers reminders itself; the 08:00 brief and the Sunday review wait for one (npx inngest-cli dev; README, Background workflows)",
      "  stop      Ctrl-C",
    ]);
    for (const file of ["pgdata.password", "database-worker-password"]) {
      expect(printed).not.toContain(readFileSync(`${soma.stateDir}/${file}`, "utf8").trim());
    }
    expect(printed).not.toMatch(/postgres:\/\/|Error|WARNING|\n\s+at /);

    // README, "Try it": sign in as the developer, then one message over HTTP.
    const signIn = await fetch(`${url}/auth/dev`, { method: "POST", headers: { origin: url } });
    expect(signIn.status).toBe(200);
    const cookie = signIn.headers
      .getSetCookie()
      .map((c) => c.split(";")[0])
      .join("; ");
    // docs/offline-model.md: every row, in order, in the same conversation.
    const rows = [...readFileSync(`${ROOT}docs/offline-model.md`, "utf8").matchAll(/^\| `([^`]+)` \| [^|]+ \| `([^`]+)` \|$/gm)];
    expect(rows.length).toBeGreaterThanOrEqual(31);
    // More rows than the 20 messages a minute a person may send: past them the test waits, as a person would.
    const send = async (message: string) => {
      for (;;) {
        const turn = await fetch(`${url}/api/chat`, {
          method: "POST",
          headers: { cookie, "content-type": "application/json" },
          body: JSON.stringify({ message }),
        });
        if (turn.status !== 429) return turn;
        await turn.body?.cancel();
        await new Promise((resolve) => setTimeout(resolve, 2_000));
      }
    };
    for (const [, said, answer] of rows) {
      const turn = await send(said!);
      expect({ said, reply: replyOf(await turn.text()).slice(0, answer!.length) }).toEqual({ said, reply: answer });
    }

    // Then the README's own line, as written (Dune is known by now: the same capture, "I already had…").
    const chat = await send("I just finished reading Dune by Frank Herbert");
    expect(chat.status).toBe(200);
    const stream = await chat.text();
    expect(stream).toContain('"toolName":"memory_capture"');
    expect(stream).toMatch(/"input":\{"type":"book","name":"Dune"/);
    expect(replyOf(stream)).toContain("Dune (book)");

    // And the README's look at what it stored, from another process, as written.
    const query = readFileSync(`${ROOT}README.md`, "utf8").match(/^npm run db:query -- "([^"]+)"$/m)?.[1];
    expect(query).toBe("select type, name from entities");
    const looked = await runCommand(["ops/db-query.ts", query!], { SOMA_STATE_DIR: soma.stateDir });
    expect(looked.stdout).toMatch(/^book +\| Dune$/m);

    // While it ran, nothing else was printed either (a sign-in, a turn, its events finding no Inngest dev
    // server, which the send gives up on within its deadline).
    await new Promise((resolve) => setTimeout(resolve, 3_000));
    expect(soma.output()).toBe(printed);
    await soma.stop();
  });

  it("builds the web app without a warning", async () => {
    const outDir = mkdtempSync(`${tmpdir()}/soma-web-build-`);
    let output = "";
    const build = spawn(
      `${ROOT}node_modules/.bin/vite`,
      ["build", "--config", "web/vite.config.ts", "--logLevel", "warn", "--outDir", outDir],
      {
        cwd: ROOT,
        stdio: ["ignore", "pipe", "pipe"],
      },
    );
    build.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
    build.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
    const code = await new Promise<number | null>((resolve) => build.once("exit", resolve));
    expect(code).toBe(0);
    expect(plain(output).trim()).toBe("");
  });
});
