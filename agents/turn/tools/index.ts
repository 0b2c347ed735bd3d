// The tools a turn gives the model: the memory tools (memory-tools.ts: memory_*), the reminder tools
// (schedule-tools.ts: schedule_create, schedule_list, routine_set) and
// the fact tools (fact-tools.ts: fact_correct, fact_forget), all bound to one person and to the message
// the turn answers (context.ts).
import type { ToolSet } from "ai";
import type { ToolContext } from "./context";
import { factTools } from "./fact-tools";
import { memoryTools } from "./memory-tools";
import { scheduleTools } from "./schedule-tools";

export function turnTools(context: ToolContext): ToolSet {
  return { ...memoryTools(context), ...scheduleTools(context), ...factTools(context) };
}
