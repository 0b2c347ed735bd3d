// Guards `npm run telegram:local`: Telegram played in the terminal with no bot and no network — the
// lines typed go to Soma's real webhook as a private chat's messages, and the bot's replies come back
// as text; the memory it wrote is there on the next run over the same state.
import { spawn } from "node:child_process";
import { mkdtempSync, statSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { describe, expect, it } from "vitest";
import { plainText } from "../../ops/telegram-local";
import { freePort } from "./helpers";
import { ROOT, runCommand } from "./service-process";
import { waitFor } from "./wait";

/** `npm run telegram:local` (the web app already built), typed into line by line. */
async function telegramLocal(stateDir: string) {
  const child = spawn(`${ROOT}node_modules/.bin/tsx`, ["ops/telegram-local.ts", "--no-build"], {
    cwd: ROOT,
    detached: true,
    env: { PATH: process.env.PATH ?? "", HOME: process.env.HOME ?? "", PORT: String(await freePort()), SOMA_STATE_DIR: stateDir },
  });
  let output = "";
  child.stdout.on("data", (chunk: Buffer) => (output += chunk.toString()));
  child.stderr.on("data", (chunk: Buffer) => (output += chunk.toString()));
  const exited = new Promise<number | null>((resolve) => child.once("exit", resolve));
  await waitFor(() => output.includes("Telegram, played here"), 90_000, "the prompt");
  /** Types `text` and waits for the bot's reply lines that follow it to match `reply`. */
  const say = async (text: string, reply: RegExp) => {
    const from = output.length;
    child.stdin.write(`${text}\n`);
    await waitFor(() => reply.test(output.slice(from)), 30_000, `the reply to ${text}`).catch((error: Error) => {
      throw new Error(`${error.message}; printed: ${output.slice(from)}`);
    });
    return output.slice(from);
  };
  return { say, output: () => output, end: () => child.stdin.end(), exited, kill };
  function kill() {
    try {
      process.kill(-child.pid!, "SIGKILL");
    } catch {
      // stopped by itself
    }
  }
}

describe("npm run telegram:local", () => {
  it("chats through the real webhook in the terminal, and remembers across runs", { timeout: 240_000 }, async () => {
    const stateDir = mkdtempSync(`${tmpdir()}/soma-telegram-local-`);
    const first = await telegramLocal(stateDir);
    try {
      // Plain text as it is (the welcome is not HTML: "<words>" stays), HTML read as text.
      expect(await first.say("/start", /soma › Hi, I'm Soma/)).toContain("/forget <words> — forget something");
      expect(await first.say("I just finished reading Dune by Frank Herbert", /soma › Noted: Dune \(book\)/)).not.toContain(
        "webhook answered",
      );
      first.end(); // the end of input stops it all, after the last replies
      expect(await first.exited).toBe(0);
    } finally {
      first.kill();
    }

    const second = await telegramLocal(stateDir);
    try {
      await second.say("which books did I read?", /soma › Your books: Dune\./);
      second.end();
      expect(await second.exited).toBe(0);
    } finally {
      second.kill();
    }
  });

  it("as a newcomer runs it (the web app built first): a busy port refused before the build, naming this command", async () => {
    const busy = createServer();
    const port = await freePort();
    await new Promise<void>((resolve) => busy.listen(port, "127.0.0.1", resolve));
    const built = statSync(`${ROOT}web/dist/index.html`).mtimeMs;
    try {
      const refused = await runCommand(["ops/telegram-local.ts"], {
        PORT: String(port),
        SOMA_STATE_DIR: mkdtempSync(`${tmpdir()}/soma-telegram-local-`),
      });
      expect([refused.code, refused.stderr.trim()]).toEqual([
        1,
        `telegram:local failed: port ${port} is in use (another npm start?). Stop it, or start on another port: PORT=${port + 1} npm run telegram:local`,
      ]);
      expect(statSync(`${ROOT}web/dist/index.html`).mtimeMs).toBe(built);
    } finally {
      await new Promise((resolve) => busy.close(resolve));
    }
  });

  it("shows Telegram's HTML as text", () => {
    expect(plainText("<b>Dune</b> &amp; <i>Solaris</i><br>&lt;3 &quot;yes&quot;")).toBe('Dune & Solaris\n<3 "yes"');
  });
});
