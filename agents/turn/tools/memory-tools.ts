// The memory tools the model sees (the reminder tools: schedule-tools.ts). The person is never an input: every tool is bound to this agent's
// user id, and every database call runs through Database.withUser, so row-level security holds even
// if the model is told to reach someone else's memories (the fact tools, agents/turn/tools/fact-tools.ts, too).
// Memories that came from email are fenced in what recall returns, and the tools that change something
// refuse to act on an email's say-so (agents/turn/tools/untrusted-memory.ts). Dates the model gives are read on
// the person's clock (agents/turn/tools/memory-time.ts).
import { tool, type ModelMessage, type ToolSet } from "ai";
import { z } from "zod";
import {
  archiveEntity,
  captureEntity,
  entityNames,
  recall,
  recordSource,
  relateEntities,
  updateEntityProperties,
} from "../../../db/repositories/memory";
import { EntityType, MemoryName } from "../../entity-type";
import { thirdPartyRefusal, type ToolContext } from "./context";
import { idempotencyKey } from "./idempotency";
import { dateOrTime, recallWindow, startOf } from "./memory-time";
import { embedOne } from "../../integrations/model/embeddings";
import { fenceThirdParty, type GuardedTool } from "./untrusted-memory";

const entityType = EntityType.describe(
  "Kind of thing, lowercase singular: book, movie, place, person, project, habit, event, organization, note, …",
);
const properties = z.record(z.string(), z.union([z.string().max(500), z.number(), z.boolean(), z.null()]));
const entityId = z.uuid().describe("id of an entity from memory_recall or memory_capture");

export function memoryTools(context: ToolContext): ToolSet {
  const { db, userId, embedder } = context;
  // Names the call acts on: the model's own words, or the stored names of the entities it names by id.
  const refusal = (name: GuardedTool, targets: string[] | { entityIds: string[] }, messages: ModelMessage[]) =>
    thirdPartyRefusal(name, messages, () =>
      Array.isArray(targets) ? targets : db.withUser(userId, (tx) => entityNames(tx, targets.entityIds)),
    );

  return {
    memory_capture: tool({
      description: "Save something the person told you about their life. Saving the same thing twice keeps one memory and merges details.",
      inputSchema: z.object({
        type: entityType,
        name: MemoryName,
        properties: properties.optional().describe('Details worth keeping, e.g. {author: "Frank Herbert"}'),
        happenedAt: dateOrTime
          .optional()
          .describe(
            'When it happened, only if the person said so ("I finished Dune last week" → that date): 2026-05-01, or a local date and time',
          ),
      }),
      execute: async ({ happenedAt, ...input }, { messages }) => {
        const refused = await refusal("memory_capture", [input.name], messages);
        if (refused) return { error: refused };
        const embedding = await embedOne(embedder, `${input.type}: ${input.name}`);
        const happened = happenedAt === undefined ? null : startOf(happenedAt, context.timezone ?? "UTC");
        const result = await db.withUser(userId, async (tx) => {
          const sourceId = await recordSource(tx, userId, context.source);
          return captureEntity(tx, userId, {
            ...input,
            embedding,
            sourceId,
            happenedAt: happened,
            ...(context.toldAt ? { toldAt: context.toldAt } : {}),
          });
        });
        context.onActivity?.({ kind: "captured", entityId: result.entityId, type: input.type, name: input.name, created: result.created });
        return result;
      },
    }),

    memory_recall: tool({
      description:
        'Search the person\'s memories (kind "entity") and the facts you know about them (kind "fact") by meaning, words and spelling. Pass `type` to list every memory of a kind ("which books did I read?" → type book), since/until for a time ("last month"). Each result has toldAt and, when known, happenedAt.',
      inputSchema: z.object({
        query: z.string().trim().min(1).max(500),
        type: entityType.optional(),
        limit: z.number().int().min(1).max(50).default(10),
        since: dateOrTime
          .optional()
          .describe("Only what happened (else was told) from this date or time on: 2026-05-01 is that whole day, the person's local time"),
        until: dateOrTime
          .optional()
          .describe("Only what happened (else was told) up to this date or time, inclusive: 2026-05-31 includes that whole day"),
      }),
      execute: async ({ since, until, ...input }) => {
        const window = recallWindow({ since, until }, context.timezone ?? "UTC");
        if ("error" in window) return { error: window.error };
        const embedding = await embedOne(embedder, input.query);
        const recalled = await recall(db, userId, { ...input, ...window, embedding });
        context.onActivity?.({ kind: "recalled", results: recalled.length, typed: input.type !== undefined });
        return fenceThirdParty(recalled);
      },
    }),

    memory_update: tool({
      description: "Add or change details of a memory.",
      inputSchema: z.object({ entityId, properties }),
      execute: async ({ entityId: id, properties: details }, { messages }) => {
        const refused = await refusal("memory_update", { entityIds: [id] }, messages);
        if (refused) return { error: refused };
        const updated = await db.withUser(userId, (tx) => updateEntityProperties(tx, id, details));
        if (updated) context.onActivity?.({ kind: "updated", entityId: id });
        return { updated };
      },
    }),

    memory_forget: tool({
      description: "Forget a memory (it is archived and never recalled again).",
      inputSchema: z.object({ entityId }),
      execute: async ({ entityId: id }, { messages }) => {
        const refused = await refusal("memory_forget", { entityIds: [id] }, messages);
        if (refused) return { error: refused };
        const archived = await db.withUser(userId, (tx) => archiveEntity(tx, id));
        if (archived) context.onActivity?.({ kind: "forgotten", entityId: id });
        return { archived };
      },
    }),

    memory_relate: tool({
      description: "Link two memories, e.g. a book written_by a person.",
      inputSchema: z.object({
        fromId: entityId,
        toId: entityId,
        type: z
          .string()
          .trim()
          .toLowerCase()
          .regex(/^[a-z][a-z_]{0,39}$/)
          .describe("relation in snake_case, e.g. written_by, lives_in"),
      }),
      execute: async (input, { messages }) => {
        const refused = await refusal("memory_relate", { entityIds: [input.fromId, input.toId] }, messages);
        if (refused) return { error: refused };
        // A re-run of this turn (same message, same arguments) gets the edge it already made.
        const key = await idempotencyKey(context.source, "memory_relate", input);
        const edgeId = await db.withUser(userId, async (tx) => {
          const sourceId = await recordSource(tx, userId, context.source);
          return relateEntities(tx, userId, { ...input, sourceId, idempotencyKey: key });
        });
        if (!edgeId) return { error: "unknown entity" };
        context.onActivity?.({ kind: "related", edgeId });
        return { edgeId };
      },
    }),
  };
}
