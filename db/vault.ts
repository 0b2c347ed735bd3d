// The Markdown vault: a person's memory as notes that open as an Obsidian vault, and back.
//   Soma/README.md       what the vault is, with links to everything in it
//   Soma/Memories/*.md   a note per memory: YAML front matter (id, type, dates, where it came from, its
//                        properties, its relations as [[links]]), then the same for reading
//   Soma/Facts.md        the standing facts by category, each with its history
//   Soma/Reminders.md    reminders and repeating reminders; Soma/Events.md every other event (mail, …)
//   Soma/Sources.md      the messages memories came from, quoted
// Everything Soma needs to restore the memory is in the front matter, written as YAML a person can edit;
// the notes' text below it is for reading and is derived again on every export. readVault() turns a
// vault (as `path → text`) back into an export document, which the import validates and loads like a
// JSON export (db/export-format.ts): importing Soma's own vault restores the same memories, and notes
// of the person's own (no `soma:` in their front matter) are left alone.
import { strFromU8, strToU8, unzipSync, zipSync } from "fflate";
import { parse, stringify } from "yaml";
import { EXPORT_FORMAT, EXPORT_VERSION, type SomaExportV1 } from "./export-format";

type Doc = Omit<SomaExportV1, "conversation">;
type Fact = Doc["facts"][number];
type Edge = Doc["edges"][number];
type Event = Doc["events"][number];
type Source = Doc["sources"][number];

const ROOT = "Soma";

/** The limits of a vault an import unpacks: its files' declared sizes (fflate never inflates past them). */
const VAULT_LIMITS = { files: 20_000, bytes: 32 * 1024 * 1024 } as const;

export class VaultError extends Error {
  override name = "VaultError";
}

/** A note's file name: the memory's name without what file systems and Obsidian's links refuse. */
function fileName(name: string): string {
  const clean = name
    // biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what is removed.
    .replace(/[\u0000-\u001f\\/:*?"<>|#^[\]]/g, " ")
    .replace(/\s+/g, " ")
    .trim()
    .replace(/^\.+/, "")
    .slice(0, 120)
    .trim();
  return clean || "Untitled";
}

function note(frontMatter: Record<string, unknown>, body: string): string {
  const yaml = stringify(frontMatter, { lineWidth: 0, nullStr: "null" });
  return `---\n${yaml}---\n\n${body.trim()}\n`;
}

const day = (iso: string) => iso.slice(0, 10);

/** "Telegram, 3 May 2024: “I just finished Dune”" — where a memory came from, for a person. */
function sourceLabel(source: Source | undefined): string | null {
  if (!source) return null;
  const kind = source.kind.charAt(0).toUpperCase() + source.kind.slice(1);
  const when = new Date(source.createdAt).toLocaleDateString("en-GB", { day: "numeric", month: "long", year: "numeric", timeZone: "UTC" });
  const text = typeof source.payload.text === "string" ? `: “${source.payload.text.slice(0, 200)}”` : "";
  return `${kind}, ${when}${text}`;
}

/** A memory's or fact's dates and where it came from, as the front matter writes them. */
function datesAndSource(
  row: {
    toldAt?: string | undefined;
    happenedAt?: string | null | undefined;
    createdAt: string;
    updatedAt: string;
    sourceId: string | null;
  },
  sources: Map<string, Source>,
) {
  return {
    told: row.toldAt ?? row.createdAt,
    happened: row.happenedAt ?? null,
    created: row.createdAt,
    updated: row.updatedAt,
    source: sourceLabel(sources.get(row.sourceId ?? "")),
    source_id: row.sourceId,
  };
}

function propertyLines(properties: Record<string, unknown>): string[] {
  return Object.entries(properties).map(([key, value]) => `- **${key}**: ${typeof value === "string" ? value : JSON.stringify(value)}`);
}

/** The person's export as the vault's files (`path → text`). */
export function renderVault(doc: Doc): Map<string, string> {
  const files = new Map<string, string>();
  const sources = new Map(doc.sources.map((s) => [s.id, s]));
  // Each memory's note name: its name, then its type when two memories share a name, then a number.
  const notes = new Map<string, string>();
  const taken = new Set<string>();
  const byName = new Map<string, number>();
  for (const e of doc.entities) byName.set(fileName(e.name).toLowerCase(), (byName.get(fileName(e.name).toLowerCase()) ?? 0) + 1);
  for (const e of doc.entities) {
    const base = fileName(e.name);
    let name = (byName.get(base.toLowerCase()) ?? 0) > 1 ? `${base} (${fileName(e.type)})` : base;
    for (let n = 2; taken.has(name.toLowerCase()); n++) name = `${base} (${fileName(e.type)}) ${n}`;
    taken.add(name.toLowerCase());
    notes.set(e.id, name);
  }
  const link = (id: string) => `[[${notes.get(id)}]]`;
  const edgesFrom = new Map<string, Edge[]>();
  for (const edge of doc.edges) edgesFrom.set(edge.fromId, [...(edgesFrom.get(edge.fromId) ?? []), edge]);
  const edgesTo = new Map<string, Edge[]>();
  for (const edge of doc.edges) edgesTo.set(edge.toId, [...(edgesTo.get(edge.toId) ?? []), edge]);

  for (const e of doc.entities) {
    const relations = (edgesFrom.get(e.id) ?? []).map((edge) => ({
      id: edge.id,
      type: edge.type,
      to: link(edge.toId),
      to_id: edge.toId,
      valid_from: edge.validFrom,
      valid_to: edge.validTo,
      ...(Object.keys(edge.properties).length ? { properties: edge.properties } : {}),
      source_id: edge.sourceId,
      created: edge.createdAt,
    }));
    const events = doc.events.filter((event) => event.entityIds.includes(e.id));
    const body = [
      `# ${e.name}`,
      "",
      `${/^[aeiou]/i.test(e.type) ? "An" : "A"} ${e.type}${e.status === "archived" ? ", forgotten" : ""}. Told ${day(e.toldAt ?? e.createdAt)}${e.happenedAt ? `, happened ${day(e.happenedAt)}` : ""}.`,
      ...(Object.keys(e.properties).length ? ["", ...propertyLines(e.properties)] : []),
      ...(sourceLabel(sources.get(e.sourceId ?? "")) ? ["", `From ${sourceLabel(sources.get(e.sourceId ?? ""))}`] : []),
      ...(relations.length || edgesTo.get(e.id)?.length
        ? [
            "",
            "## Related",
            ...relations.map((r) => `- ${r.type.replaceAll("_", " ")} ${r.to}`),
            ...(edgesTo.get(e.id) ?? []).map((edge) => `- ${link(edge.fromId)} ${edge.type.replaceAll("_", " ")} this`),
          ]
        : []),
      ...(events.length
        ? ["", "## Events", ...events.map((event) => `- ${day(event.occurredAt)} ${event.kind}: ${eventText(event)}`)]
        : []),
    ].join("\n");
    files.set(
      `${ROOT}/Memories/${notes.get(e.id)}.md`,
      note(
        {
          soma: "memory",
          id: e.id,
          type: e.type,
          name: e.name,
          status: e.status,
          ...datesAndSource(e, sources),
          properties: e.properties,
          relations,
          tags: [`soma/${fileName(e.type).replaceAll(" ", "-")}`],
        },
        body,
      ),
    );
  }

  files.set(`${ROOT}/Facts.md`, factsNote(doc.facts, sources));
  const reminders = doc.events.filter((e) => e.kind === "reminder" || e.kind === "schedule");
  const others = doc.events.filter((e) => e.kind !== "reminder" && e.kind !== "schedule");
  files.set(`${ROOT}/Reminders.md`, eventsNote("reminders", "Reminders", reminders, link));
  files.set(`${ROOT}/Events.md`, eventsNote("events", "Events", others, link));
  files.set(
    `${ROOT}/Sources.md`,
    note(
      {
        soma: "sources",
        sources: doc.sources.map((s) => ({ id: s.id, kind: s.kind, external_id: s.externalId, created: s.createdAt, payload: s.payload })),
      },
      ["# Sources", "", "The messages Soma learned from.", "", ...doc.sources.map((s) => `- ${sourceLabel(s)}`)].join("\n"),
    ),
  );
  files.set(
    `${ROOT}/README.md`,
    note(
      { soma: "vault", format: EXPORT_FORMAT, version: EXPORT_VERSION, exported: doc.exportedAt, person: doc.person },
      [
        `# ${doc.person.displayName ? `${doc.person.displayName}'s` : "Your"} memory in Soma`,
        "",
        `Exported ${day(doc.exportedAt)}: ${doc.entities.length} memories, ${doc.facts.length} facts (with their history), ${reminders.length} reminders.`,
        "",
        "- [[Facts]] — what Soma knows about you",
        "- [[Reminders]] — reminders and repeating reminders",
        "- [[Events]] — mail and other events",
        "- [[Sources]] — the messages it learned from",
        "- Memories/ — a note per memory",
        "",
        "Import this folder as a .zip in Soma's Settings to restore it; the front matter of each note is what is read.",
      ].join("\n"),
    ),
  );
  return files;
}

function eventText(event: Event): string {
  return typeof event.payload.text === "string"
    ? event.payload.text
    : typeof event.payload.subject === "string"
      ? event.payload.subject
      : event.kind;
}

function factsNote(facts: Fact[], sources: Map<string, Source>): string {
  const current = facts.filter((f) => !f.supersededBy);
  const earlier = new Map<string, Fact[]>();
  for (const f of facts) if (f.supersededBy) earlier.set(f.supersededBy, [...(earlier.get(f.supersededBy) ?? []), f]);
  const categories = [...new Set(current.map((f) => f.category))].sort();
  const body = [
    "# Facts",
    "",
    current.length
      ? "What Soma knows about you, by category, with how sure it is and what it replaced."
      : "Soma knows no facts about you yet.",
    ...categories.flatMap((category) => [
      "",
      `## ${category.charAt(0).toUpperCase()}${category.slice(1)}`,
      ...current
        .filter((f) => f.category === category)
        .flatMap((f) => [
          `- ${f.statement} (${Math.round(f.confidence * 100)} %, told ${day(f.toldAt ?? f.createdAt)}${f.happenedAt ? `, since ${day(f.happenedAt)}` : ""})`,
          ...(earlier.get(f.id) ?? []).map((old) => `  - before: ${old.statement} (told ${day(old.toldAt ?? old.createdAt)})`),
        ]),
    ]),
  ].join("\n");
  return note(
    {
      soma: "facts",
      facts: facts.map((f) => ({
        id: f.id,
        statement: f.statement,
        category: f.category,
        subject: f.subject,
        confidence: f.confidence,
        origin: f.origin ?? "extracted",
        superseded_by: f.supersededBy,
        ...datesAndSource(f, sources),
      })),
    },
    body,
  );
}

function eventsNote(kind: "reminders" | "events", title: string, events: Event[], link: (id: string) => string): string {
  const body = [
    `# ${title}`,
    "",
    ...(events.length ? [] : [`No ${title.toLowerCase()}.`]),
    ...events.map(
      (e) =>
        `- ${e.occurredAt.slice(0, 16).replace("T", " ")} UTC — ${eventText(e)} (${e.kind === "schedule" ? `repeats: ${String(e.payload.rule ?? "")}, ` : ""}${e.status})${
          e.entityIds.length ? ` · ${e.entityIds.map(link).join(", ")}` : ""
        }`,
    ),
  ].join("\n");
  return note(
    {
      soma: kind,
      events: events.map((e) => ({
        id: e.id,
        kind: e.kind,
        occurred: e.occurredAt,
        status: e.status,
        payload: e.payload,
        entity_ids: e.entityIds,
        source_id: e.sourceId,
        created: e.createdAt,
        told: e.toldAt ?? e.createdAt,
      })),
    },
    body,
  );
}

/** The front matter of a note, or null when it has none. */
function frontMatter(text: string): Record<string, unknown> | null {
  const match = /^\uFEFF?---\r?\n([\s\S]*?)\r?\n---(?:\r?\n|$)/.exec(text);
  if (!match) return null;
  const value = parse(match[1]!, { maxAliasCount: 0 }) as unknown;
  return value && typeof value === "object" && !Array.isArray(value) ? (value as Record<string, unknown>) : null;
}

type Row = Record<string, unknown>;
const list = (value: unknown): Row[] => (Array.isArray(value) ? value.filter((v): v is Row => !!v && typeof v === "object") : []);
const text = (value: unknown) => (value instanceof Date ? value.toISOString() : value);

/**
 * A vault (`path → text`) as an export document, for the import to validate and load. Only notes whose
 * front matter says `soma:` are read; a note Soma cannot read stops it with the note's path.
 */
export function readVault(files: Map<string, string>): Record<string, unknown> {
  const doc = {
    format: EXPORT_FORMAT,
    version: EXPORT_VERSION,
    exportedAt: new Date().toISOString(),
    person: { displayName: "", timezone: "UTC" } as unknown,
    sources: [] as Row[],
    entities: [] as Row[],
    facts: [] as Row[],
    edges: [] as Row[],
    events: [] as Row[],
    conversation: [],
  };
  let found = false;
  for (const [path, content] of [...files].sort(([a], [b]) => a.localeCompare(b))) {
    if (!path.endsWith(".md")) continue;
    let front: Record<string, unknown> | null;
    try {
      front = frontMatter(content);
    } catch (error) {
      throw new VaultError(`${path}: its front matter is not YAML (${(error as Error).message.split("\n")[0]})`);
    }
    if (!front || typeof front.soma !== "string") continue;
    found = true;
    if (front.soma === "vault") {
      doc.exportedAt = String(text(front.exported) ?? doc.exportedAt);
      doc.person = front.person ?? doc.person;
    } else if (front.soma === "memory") {
      doc.entities.push({
        id: front.id,
        type: front.type,
        name: front.name,
        properties: front.properties ?? {},
        status: front.status ?? "active",
        sourceId: front.source_id ?? null,
        createdAt: text(front.created),
        updatedAt: text(front.updated ?? front.created),
        toldAt: text(front.told ?? front.created),
        happenedAt: text(front.happened ?? null),
      });
      for (const r of list(front.relations))
        doc.edges.push({
          id: r.id,
          fromId: front.id,
          toId: r.to_id,
          type: r.type,
          properties: r.properties ?? {},
          validFrom: text(r.valid_from),
          validTo: text(r.valid_to ?? null),
          sourceId: r.source_id ?? null,
          createdAt: text(r.created),
        });
    } else if (front.soma === "facts") {
      for (const f of list(front.facts))
        doc.facts.push({
          id: f.id,
          statement: f.statement,
          category: f.category,
          subject: f.subject ?? "",
          confidence: f.confidence,
          origin: f.origin ?? "extracted",
          supersededBy: f.superseded_by ?? null,
          sourceId: f.source_id ?? null,
          createdAt: text(f.created),
          updatedAt: text(f.updated ?? f.created),
          toldAt: text(f.told ?? f.created),
          happenedAt: text(f.happened ?? null),
        });
    } else if (front.soma === "reminders" || front.soma === "events") {
      for (const e of list(front.events))
        doc.events.push({
          id: e.id,
          kind: e.kind,
          occurredAt: text(e.occurred),
          payload: e.payload ?? {},
          entityIds: e.entity_ids ?? [],
          status: e.status,
          sourceId: e.source_id ?? null,
          createdAt: text(e.created),
          toldAt: text(e.told ?? e.created),
        });
    } else if (front.soma === "sources") {
      for (const s of list(front.sources))
        doc.sources.push({ id: s.id, kind: s.kind, externalId: s.external_id, payload: s.payload ?? {}, createdAt: text(s.created) });
    }
  }
  if (!found) throw new VaultError("This .zip holds no notes of a Soma vault (notes whose front matter has a `soma:` key).");
  return doc;
}

/** The vault as a .zip (Soma/… inside). */
export function zipVault(files: Map<string, string>): Uint8Array {
  return zipSync(Object.fromEntries([...files].map(([path, content]) => [path, strToU8(content)])), { level: 6 });
}

/** A .zip's Markdown notes, refusing one whose files declare more than VAULT_LIMITS (fflate never inflates past a declared size). */
export function unzipVault(bytes: Uint8Array): Map<string, string> {
  let files = 0;
  let total = 0;
  let entries: Record<string, Uint8Array>;
  try {
    entries = unzipSync(bytes, {
      filter: (file) => {
        if (!file.name.endsWith(".md") || file.name.split("/").some((part) => part.startsWith("."))) return false;
        files += 1;
        total += file.originalSize;
        if (files > VAULT_LIMITS.files)
          throw new VaultError(`This .zip holds more than ${VAULT_LIMITS.files.toLocaleString("en-US")} notes.`);
        if (total > VAULT_LIMITS.bytes) throw new VaultError(`This .zip's notes come to more than ${VAULT_LIMITS.bytes / 1024 / 1024} MB.`);
        return true;
      },
    });
  } catch (error) {
    if (error instanceof VaultError) throw error;
    throw new VaultError(`This is not a readable .zip (${(error as Error).message}).`);
  }
  return new Map(Object.entries(entries).map(([path, content]) => [path, strFromU8(content)]));
}
