// What kind of thing a memory is: one short lowercase word ("book", "place", "person"), whether the
// model names it (memory_capture, memory_recall) or the person does (PATCH /api/memories/:id).
import { z } from "zod";

export const EntityType = z
  .string()
  .trim()
  .toLowerCase()
  .regex(/^[a-z][a-z0-9_ -]{0,39}$/, "a short lowercase word such as book, movie, place, person");
