// The web app's calls to the Worker, through hono/client typed by the server's routes (AppType,
// worker/web-api.ts): paths, parameters and answers come from the server, imported as types only
// (the bundle takes no server code). Same origin, the session cookie rides along; a 401 means the
// session ended, so the page goes back to sign-in. Inside Telegram (the Mini App) no cookie reaches a
// cross-site iframe: the session is a bearer token the Mini App holds (sendBearer), and a 401 there
// tells the Mini App, which cannot send anyone to /login.
import { hc, type ClientRequestOptions, type InferResponseType } from "hono/client";
import type { ErrorBody } from "../../worker/errors";
import type { FactCorrection } from "../../worker/routes/facts";
import type { MemoryChange, MemoryListQuery } from "../../worker/routes/memories";
import type { AppType } from "../../worker/web-api";

let bearer: string | null = null;
/** What happens when the session ends: a page sent to sign-in, or the Mini App told (sendBearer). */
let signedOut = () => window.location.assign("/login");

/** Sends `token` as `Authorization: Bearer` with every call; `onSignedOut` runs when it stops working. */
export function sendBearer(token: string, onSignedOut: () => void): void {
  bearer = token;
  signedOut = onSignedOut;
}

/** Ends the session in the way it began: back to sign-in, or the Mini App says it ended. */
export function leave(): void {
  signedOut();
}

const client = hc<AppType>("/", {
  init: { credentials: "same-origin" },
  headers: (): Record<string, string> => (bearer ? { authorization: `Bearer ${bearer}` } : {}),
});
const memoryRoute = client.api.memories[":id"];

export type Me = InferResponseType<typeof client.api.me.$get>;

export type Fact = InferResponseType<typeof client.api.facts.$get>["current"][number];

/** The categories the server accepts for a correction (it answers 400 for others). */
export type FactCategory = NonNullable<FactCorrection["category"]>;

/** The same categories, in the order the Facts page lists them: `tsc` fails here should the server's list change. */
export const FACT_CATEGORIES = [
  "personal",
  "location",
  "work",
  "relationship",
  "preference",
  "health",
  "habit",
  "goal",
  "general",
] as const satisfies readonly FactCategory[];
// Compile-time only: names a category the server accepts that FACT_CATEGORIES lacks (the line above catches the reverse).
({}) satisfies Record<Exclude<FactCategory, (typeof FACT_CATEGORIES)[number]>, never>;

/** An app connected to the person's memory through MCP (GET /api/apps). */
export type ConnectedApp = InferResponseType<typeof client.api.apps.$get>["apps"][number];

/** A browser the person turned notifications on in (GET /api/push). */
export type PushState = InferResponseType<typeof client.api.push.$get>;
export type PushDevice = PushState["devices"][number];

export type Reminder = InferResponseType<typeof client.api.reminders.$get>["upcoming"][number];
/** A repeating reminder (GET /api/reminders' schedules). */
export type Schedule = InferResponseType<typeof client.api.reminders.$get>["schedules"][number];
const scheduleRoute = client.api.reminders.schedules[":id"];
export type ReminderStatus = Reminder["status"];
/** The morning brief or the weekly review, as the person set it. */
export type Routine = InferResponseType<typeof client.api.routines.$get>["brief"];
export type RoutineChange = { on?: boolean; time?: string; days?: Routine["days"] };

/** What an import adds, per kind (a dry run: what it would add). */
export type ImportCounts = InferResponseType<typeof client.api.import.$post>["imported"];

/** A memory in the list: a search's results (ranked by recall) carry less than a page of the newest. */
export type Memory = InferResponseType<typeof client.api.memories.$get>["memories"][number];
export type MemoryDetail = InferResponseType<typeof memoryRoute.$get>;

/** `from`, `to`: ISO date-times: happened (else told) at or after `from`, before `to`. */
export type MemoryFilter = Pick<MemoryListQuery, "q" | "type" | "from" | "to">;

const JSON_HEADERS = { "content-type": "application/json" };

/**
 * A body for the routes that read their own (worker/validation.ts readJson), sent as it is: the
 * client's `json` is only for routes that declare it.
 */
function body(text: string): ClientRequestOptions {
  return { headers: JSON_HEADERS, init: { body: text } };
}

/** A path parameter as one path segment. */
function param(id: string) {
  return { param: { id: encodeURIComponent(id) } };
}

/** The answer's JSON; a failure throws with the server's message (the pages show it). */
async function read<R extends { ok: boolean; status: number; json(): Promise<unknown> }>(
  pending: Promise<R>,
): Promise<Awaited<ReturnType<R["json"]>>> {
  const response = await pending;
  if (response.status === 401) {
    signedOut();
    throw new Error("signed out");
  }
  if (!response.ok) {
    const failure = (await response.json().catch(() => null)) as Partial<ErrorBody> | null;
    throw new Error(failure?.error?.message ?? `Request failed (${response.status})`);
  }
  return (await response.json()) as Awaited<ReturnType<R["json"]>>;
}

/** Where the export file downloads from (a plain link: the answer is an attachment). */
export const EXPORT_PATH = client.api.export.$path();
/** Where the Markdown vault (.zip) downloads from. */
export const VAULT_PATH = client.api.export.vault.$path();

/** An import of conversations from another assistant, with its progress (GET /api/imports). */
export type ConversationImport = InferResponseType<typeof client.api.imports.$get>["imports"][number];
const importRoute = client.api.imports[":id"];

/** A file to import: a JSON export's text, or a vault's .zip as it is. */
export type ImportBody = { json: string } | { zip: ArrayBuffer };

export const api = {
  me: () => read(client.api.me.$get()),
  memories: (filter: MemoryFilter & { cursor?: string | null; limit?: number }) => {
    const query = Object.fromEntries(
      Object.entries(filter)
        .filter(([, v]) => v !== undefined && v !== null && v !== "")
        .map(([k, v]) => [k, String(v)]),
    );
    return read(client.api.memories.$get({ query }));
  },
  memoryTypes: () => read(client.api.memories.types.$get()).then((r) => r.types),
  memory: (id: string) => read(memoryRoute.$get(param(id))),
  editMemory: (id: string, edit: MemoryChange) => read(memoryRoute.$patch(param(id), body(JSON.stringify(edit)))),
  forget: (id: string) => read(memoryRoute.$delete(param(id))),
  restore: (id: string) => read(memoryRoute.restore.$post(param(id))),
  setTimezone: (timezone: string) => read(client.api.me.timezone.$put({}, body(JSON.stringify({ timezone })))),
  setNotify: (choices: Partial<Me["notify"]>) => read(client.api.me.notify.$put({}, body(JSON.stringify(choices)))).then((r) => r.notify),
  routines: () => read(client.api.routines.$get()),
  setRoutine: (name: Routine["name"], change: RoutineChange) =>
    read(client.api.routines[":name{brief|review}"].$put({ param: { name } }, body(JSON.stringify(change)))).then((r) => r.routine),
  facts: () => read(client.api.facts.$get()),
  correctFact: (id: string, change: FactCorrection) => read(client.api.facts[":id"].$patch(param(id), body(JSON.stringify(change)))),
  deleteFact: (id: string) => read(client.api.facts[":id"].$delete(param(id))),
  reminders: () => read(client.api.reminders.$get()),
  cancelReminder: (id: string) => read(client.api.reminders[":id"].$delete(param(id))),
  pauseSchedule: (id: string, pause: boolean) =>
    read(scheduleRoute[":action{pause|resume}"].$post({ param: { id, action: pause ? "pause" : "resume" } })).then((r) => r.schedule),
  deleteSchedule: (id: string) => read(scheduleRoute.$delete(param(id))),
  editSchedule: (id: string, edit: { text?: string; time?: string }) =>
    read(scheduleRoute.$patch(param(id), body(JSON.stringify(edit)))).then((r) => r.schedule),
  /** Sends an export file or a vault; `dryRun` answers what it would add and writes nothing. */
  importFile: (file: ImportBody, dryRun: boolean) =>
    read(
      client.api.import.$post(
        { query: dryRun ? { dryRun: "1" } : {} },
        "zip" in file ? { headers: { "content-type": "application/zip" }, init: { body: file.zip } } : body(file.json),
      ),
    ),
  deleteAccount: () => read(client.api.account.$delete()),
  imports: () => read(client.api.imports.$get()).then((r) => r.imports),
  createImport: (plan: { origin: "chatgpt" | "claude"; conversations: number; from: string | null; to: string | null }) =>
    read(client.api.imports.$post({}, body(JSON.stringify(plan)))).then((r) => r.import),
  /** Sends a batch of conversations (their JSON, at most 100 of them). */
  sendConversations: (id: string, batch: string) => read(importRoute.conversations.$post(param(id), body(batch))).then((r) => r.import),
  startImport: (id: string) => read(importRoute.start.$post(param(id))).then((r) => r.import),
  cancelImport: (id: string) => read(importRoute.$delete(param(id))).then((r) => r.import),
  importPasted: (text: string) => read(client.api.imports.pasted.$post({}, body(JSON.stringify({ text })))).then((r) => r.import),
  apps: () => read(client.api.apps.$get()).then((r) => r.apps),
  disconnectApp: (id: string) => read(client.api.apps[":id"].$delete(param(id))),
  push: () => read(client.api.push.$get()),
  /** Keeps this browser's subscription (PushSubscription.toJSON()) with a label for the person. */
  subscribePush: (subscription: PushSubscriptionJSON, label: string) =>
    read(client.api.push.subscriptions.$post({}, body(JSON.stringify({ ...subscription, label })))),
  removePushDevice: (id: string) => read(client.api.push.subscriptions[":id"].$delete(param(id))),
  testPush: () => read(client.api.push.test.$post()),
};
