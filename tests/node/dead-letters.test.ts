// A poison update under `npm start`, run as a separate process: a message whose answer fails every
// time for a reason that is not an outage is acknowledged (200), set aside after three attempts with
// the apology, never answered twice however often Telegram redelivers it, does not hold back the
// message behind it, and is what `npm run inbox:dead` lists, with its error.
import { spawnSync } from "node:child_process";
import { afterEach, describe, expect, inject, it } from "vitest";
import { APOLOGY } from "../../agents/inbox-policy";
import { WELCOME } from "../../agents/commands/index";
import { freePort } from "./helpers";
import { ROOT, WEBHOOK_SECRET, launch, stopAll, tempDir, wrapUp } from "./service-process";
import { randomChatId, sent, webhook } from "./service-http";
import { waitFor } from "./wait";

const standIn = inject("standInUrl");

afterEach(async (context) => {
  await stopAll();
  const logs = wrapUp(context.task.result?.state === "fail");
  if (context.task.result?.state === "fail") console.error(`service logs:\n${logs}`);
});

function inboxDead(...args: string[]) {
  const run = spawnSync(`${ROOT}node_modules/.bin/tsx`, ["ops/inbox-dead.ts", ...args], {
    cwd: ROOT,
    encoding: "utf8",
    env: { ...process.env, APP_BASE_URL: "", OPS_TOKEN: "" },
    timeout: 30_000,
  });
  return { status: run.status, out: `${run.stdout}${run.stderr}` };
}

describe("a poison update", () => {
  it("is acknowledged, set aside after three attempts with the apology, never answered twice, and listed by npm run inbox:dead", async () => {
    const service = await launch({
      stateDir: tempDir("soma-dead-letters-"),
      port: await freePort(),
      standIn,
      env: { AI_PROVIDER: "openai-compatible", AI_BASE_URL: `${standIn}/v1`, AI_MODEL: "stand-in" },
    });
    const chatId = randomChatId();
    const base = 400_000_000 + Math.floor(Math.random() * 1e8);
    expect(await webhook(service.url, WEBHOOK_SECRET, chatId, base, "/start")).toBe(200);
    await waitFor(async () => (await sent(standIn, chatId)).length >= 1 || undefined, 30_000, "the welcome");
    // The model provider refuses this message every time (a 400, as a content filter answers): poison, not an outage.
    const poison = base + 1;
    expect(await webhook(service.url, WEBHOOK_SECRET, chatId, poison, "Summarise this: POISON")).toBe(200);
    expect(await webhook(service.url, WEBHOOK_SECRET, chatId, base + 2, "I read Dune")).toBe(200);
    const replies = await waitFor(
      async () => {
        const texts = await sent(standIn, chatId);
        return texts.length >= 3 ? texts : undefined;
      },
      30_000,
      "the apology and the next answer",
    );
    expect(replies.slice(0, 2)).toEqual([WELCOME, APOLOGY]);
    expect(replies[2]).toMatch(/^Done\. Tool said: .*"created":true/);
    // Telegram redelivers it (a slow acknowledgement, say): acknowledged again, answered no more.
    expect(await webhook(service.url, WEBHOOK_SECRET, chatId, poison, "Summarise this: POISON")).toBe(200);
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(await sent(standIn, chatId)).toHaveLength(3);

    const listed = inboxDead("--url", service.url);
    expect(listed.status, listed.out).toBe(0);
    const line = listed.out.split("\n").find((l) => l.includes(String(poison)));
    expect(line, listed.out).toMatch(/inbox/);
    expect(line).toMatch(/refuses this input/);
    expect(line).toMatch(/"Summarise this: POISON" \(22 chars\)/);

    expect(inboxDead("--url", service.url, "--limit", "0").status).toBe(2);
    expect(inboxDead("--url", "ftp://nowhere").status).toBe(2);
    const closed = inboxDead("--url", `http://127.0.0.1:${await freePort()}`);
    expect(closed.status).toBe(1);
  });
});
