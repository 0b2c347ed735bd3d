// Guards the import preview: POST /api/import?dryRun=1 answers the counts the import would add, from the
// same checks and statements, and writes nothing — neither rows nor conversation.
import { describe, expect, it } from "vitest";
import { call, chatAs, newPerson, sessionCookie } from "./helpers";
import { importAs, rowCounts, seedMemory } from "./memory-files";

async function conversationLength(cookie: string): Promise<number> {
  const file = (await (await call("/api/export", { headers: { cookie } })).json()) as { conversation: unknown[] };
  return file.conversation.length;
}

describe("POST /api/import?dryRun=1", () => {
  it("answers the counts the import then adds, and writes nothing", async () => {
    const ada = await newPerson("Ada");
    const adaCookie = await sessionCookie(ada);
    await seedMemory(ada, "Ada");
    await chatAs(adaCookie, "I just finished reading Solaris");
    const file = await (await call("/api/export", { headers: { cookie: adaCookie } })).text();

    const bob = await newPerson("Bob");
    const bobCookie = await sessionCookie(bob);
    await seedMemory(bob, "Bob");
    const rowsBefore = await rowCounts(bob.id);
    const messagesBefore = await conversationLength(bobCookie);

    const preview = await importAs(bobCookie, file, {}, "?dryRun=1");
    expect(preview.status).toBe(200);
    const previewed = (await preview.json()) as { dryRun: boolean; imported: Record<string, number> };
    expect(previewed.dryRun).toBe(true);
    expect(previewed.imported).toMatchObject({ facts: 2, edges: 1, events: 2, messages: 2 }); // events: the reminder and the email
    expect(previewed.imported.entities).toBeGreaterThanOrEqual(2);
    // Nothing was written: not a row, not a message.
    expect(await rowCounts(bob.id)).toEqual(rowsBefore);
    expect(await conversationLength(bobCookie)).toBe(messagesBefore);

    const real = await importAs(bobCookie, file);
    expect(real.status).toBe(200);
    expect(((await real.json()) as { imported: Record<string, number> }).imported).toEqual(previewed.imported);
    const after = await rowCounts(bob.id);
    for (const table of ["sources", "entities", "facts", "edges", "events"])
      expect(after![table]).toBe(rowsBefore![table]! + previewed.imported[table]!);

    // Previewing a file already imported finds nothing to add.
    const again = (await (await importAs(bobCookie, file, {}, "?dryRun=1")).json()) as { imported: Record<string, number> };
    expect(again.imported).toEqual({ sources: 0, entities: 0, facts: 0, edges: 0, events: 0, messages: 0 });
  });

  it("refuses a bad file the way the import does", async () => {
    const cookie = await sessionCookie(await newPerson("Cy"));
    const response = await importAs(cookie, JSON.stringify({ format: "soma-export", version: 99 }), {}, "?dryRun=1");
    expect(response.status).toBe(400);
    expect(((await response.json()) as { error: { message: string } }).error.message).toContain("version 99");
  });
});
