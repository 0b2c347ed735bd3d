// What kind of thing a memory is: one short lowercase word ("book", "place", "person"), whether the
// model names it (memory_capture, memory_recall) or the person does (PATCH /api/memories/:id); and a
// memory's name, as the agent's tools and the MCP server's take it.
import { z } from "zod";
import { nameKeyFits } from "../db/repositories/memory";

export const EntityType = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z][a-z0-9_ -]{0,39}$/, "a short lowercase word such as book, movie, place, person");

/** A memory's name or title as the person said it (short enough for the name key Postgres indexes). */
export const MemoryName = z
  .string()
  .trim()
  .min(1)
  .max(200)
  .refine(nameKeyFits, "the name is too long")
  .describe("The name or title, as the person said it");
