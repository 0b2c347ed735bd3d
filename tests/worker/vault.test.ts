// Guards the Markdown vault (issue 30, item 6): GET /api/export/vault is a .zip of notes — a note per
// memory with YAML front matter (id, type, dates, source, properties, [[links]] to related memories), the
// standing facts with their history, reminders and schedules — every link of which resolves to a note of
// the vault, as Obsidian needs; POST /api/import takes the same .zip back: into another account it
// restores the same memories (a round trip, compared with the JSON export), into the same one it adds
// nothing; a zip that is not a vault, a note that is not YAML, a bomb, or a tampered note is refused
// with a 400 that says why, and nothing is written.
import { strFromU8, strToU8, unzipSync, zipSync } from "fflate";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { SomaExport, type SomaExportV1 } from "../../db/export-format";
import { call, newPerson, sessionCookie } from "./helpers";
import { memories, rowCounts, seedMemory } from "./memory-files";

async function vaultOf(cookie: string): Promise<Map<string, string>> {
  const response = await call("/api/export/vault", { headers: { cookie } });
  expect(response.status).toBe(200);
  expect(response.headers.get("content-type")).toBe("application/zip");
  expect(response.headers.get("content-disposition")).toMatch(/^attachment; filename="soma-vault-\d{4}-\d{2}-\d{2}\.zip"$/);
  const files = unzipSync(new Uint8Array(await response.arrayBuffer()));
  return new Map(Object.entries(files).map(([path, bytes]) => [path, strFromU8(bytes)]));
}

const zipOf = (files: Map<string, string>) => zipSync(Object.fromEntries([...files].map(([path, text]) => [path, strToU8(text)])));

function importZip(cookie: string, zip: Uint8Array, query = "") {
  return call(`/api/import${query}`, {
    method: "POST",
    headers: { cookie, origin: "https://soma.test", "content-type": "application/zip" },
    body: zip,
  });
}

async function exportOf(cookie: string): Promise<SomaExportV1> {
  return SomaExport.parse(await (await call("/api/export", { headers: { cookie } })).json());
}

const front = (text: string) => parse(/^---\n([\s\S]*?)\n---\n/.exec(text)![1]!) as Record<string, unknown>;

describe("the Markdown vault", () => {
  it("is a note per memory with front matter and [[links]], facts with history, reminders; every link resolves", async () => {
    const person = await newPerson("vault");
    const cookie = await sessionCookie(person);
    await seedMemory(person, "Vera");
    const vault = await vaultOf(cookie);
    expect([...vault.keys()].sort()).toEqual([
      "Soma/Events.md",
      "Soma/Facts.md",
      "Soma/Memories/Vera Dune.md",
      "Soma/Memories/Vera Herbert.md",
      "Soma/Memories/Vera Lisbon.md",
      "Soma/README.md",
      "Soma/Reminders.md",
      "Soma/Sources.md",
    ]);
    const dune = vault.get("Soma/Memories/Vera Dune.md")!;
    expect(front(dune)).toMatchObject({
      soma: "memory",
      type: "book",
      name: "Vera Dune",
      status: "active",
      happened: "2024-02-03T11:00:00.000Z",
      properties: { rating: 5 },
      relations: [{ type: "written_by", to: "[[Vera Herbert]]" }],
      tags: ["soma/book"],
    });
    expect(front(dune).source).toMatch(/^Test, \d+ \w+ \d{4}: “Vera told me things”$/);
    expect(dune).toContain("- written by [[Vera Herbert]]");
    expect(dune).toContain("- **rating**: 5");
    expect(front(vault.get("Soma/Memories/Vera Lisbon.md")!).status).toBe("archived");
    const facts = vault.get("Soma/Facts.md")!;
    expect(facts).toContain("## Home\n- Vera lives in Munich (80 %");
    expect(facts).toContain("  - before: Vera lives in Berlin");
    expect(vault.get("Soma/Reminders.md")).toContain("Vera call mum (scheduled)");
    expect(vault.get("Soma/Events.md")).toContain("Vera hello (");
    // Obsidian resolves [[X]] to the note named X anywhere in the vault: every link has its note.
    const notes = new Set([...vault.keys()].map((path) => path.split("/").at(-1)!.replace(/\.md$/, "")));
    const links = [...vault.values()].flatMap((text) => [...text.matchAll(/\[\[([^\]|]+)(?:\|[^\]]*)?\]\]/g)].map((m) => m[1]!));
    expect(links.length).toBeGreaterThan(4);
    for (const link of links) expect(notes, link).toContain(link);
  });

  it("imports back: another account gets the same memories; the same account gains nothing", async () => {
    const owner = await newPerson("vault-owner");
    const ownerCookie = await sessionCookie(owner);
    await seedMemory(owner, "Otto");
    const zip = zipOf(await vaultOf(ownerCookie));
    const other = await newPerson("vault-other");
    const otherCookie = await sessionCookie(other);

    const preview = await importZip(otherCookie, zip, "?dryRun=1");
    expect(preview.status).toBe(200);
    expect(await preview.json()).toEqual({
      dryRun: true,
      imported: { sources: 1, entities: 3, facts: 2, edges: 1, events: 2, messages: 0 },
    });
    expect(await rowCounts(other.id)).toEqual({ sources: 0, entities: 0, facts: 0, edges: 0, events: 0 });

    const imported = await importZip(otherCookie, zip);
    expect(imported.status).toBe(200);
    const original = memories(await exportOf(ownerCookie));
    const copy = memories(await exportOf(otherCookie));
    expect(copy.entities).toEqual(original.entities);
    expect(copy.facts).toEqual(original.facts);
    expect(copy.edges).toEqual(original.edges);
    expect(copy.events).toEqual(original.events);
    expect(copy.sources).toEqual(original.sources);

    const again = await importZip(ownerCookie, zip);
    expect(((await again.json()) as { imported: Record<string, number> }).imported).toEqual({
      sources: 0,
      entities: 0,
      facts: 0,
      edges: 0,
      events: 0,
      messages: 0,
    });
  });

  it("leaves the person's own notes alone and reads an edit made in Obsidian", async () => {
    const owner = await newPerson("vault-edit");
    await seedMemory(owner, "Edda");
    const vault = await vaultOf(await sessionCookie(owner));
    vault.set("Soma/My own note.md", "---\ntags: [journal]\n---\n\nNot Soma's.\n");
    vault.set("Soma/No front matter.md", "# Just text\n");
    const dune = vault.get("Soma/Memories/Edda Dune.md")!;
    vault.set("Soma/Memories/Edda Dune.md", dune.replace("rating: 5", "rating: 4\n  format: paperback"));
    const other = await newPerson("vault-edit-other");
    const cookie = await sessionCookie(other);
    expect((await importZip(cookie, zipOf(vault))).status).toBe(200);
    const book = (await exportOf(cookie)).entities.find((e) => e.name === "Edda Dune");
    expect(book?.properties).toEqual({ rating: 4, format: "paperback" });
  });

  it("refuses what is not a vault, saying why, and writes nothing", async () => {
    const person = await newPerson("vault-bad");
    const cookie = await sessionCookie(person);
    const refused = async (zip: Uint8Array, message: RegExp) => {
      const response = await importZip(cookie, zip);
      expect(response.status).toBe(400);
      expect(((await response.json()) as { error: { message: string } }).error.message).toMatch(message);
    };
    await refused(strToU8("not a zip at all"), /not a readable \.zip/);
    await refused(zipOf(new Map([["notes/a.md", "# a note\n"]])), /holds no notes of a Soma vault/);
    await refused(
      zipOf(new Map([["Soma/Memories/x.md", "---\nsoma: memory\nname: [unclosed\n---\n"]])),
      /Soma\/Memories\/x\.md: its front matter is not YAML/,
    );
    await refused(
      zipOf(new Map([["Soma/Memories/x.md", "---\nsoma: memory\nid: not-a-uuid\ntype: book\nname: X\n---\n"]])),
      /Invalid export file: entities\.0\.id/,
    );
    // A note that declares 40 MB (a bomb's declared size is all fflate would ever inflate).
    const bomb = zipSync({ "Soma/Memories/big.md": new Uint8Array(40 * 1024 * 1024) }, { level: 9 });
    await refused(bomb, /notes come to more than 32 MB/);
    expect(await rowCounts(person.id)).toEqual({ sources: 0, entities: 0, facts: 0, edges: 0, events: 0 });
  });
});
