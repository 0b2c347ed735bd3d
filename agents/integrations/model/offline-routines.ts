// The offline model's reading of the morning brief and the weekly review moved or turned off (routine_set:
// agents/schedules/routines.ts): "brief at 7:15 on weekdays", "move my morning brief to 6:30", "turn off
// the weekly review", "weekly review on Friday at 17:00", "turn the brief back on"; and "when is my brief?"
// (schedule_list, which names both). A sentence that names neither routine is not read here.
import { BYDAY } from "./offline-time";

type Weekday = "MO" | "TU" | "WE" | "TH" | "FR" | "SA" | "SU";

export type RoutineRequest =
  | { ask: "change"; routine: "brief" | "review"; change: { on?: boolean; time?: string; days?: Weekday[] } }
  | { ask: "when" };

const DAYS = BYDAY as Record<string, Weekday>;
const ALL: Weekday[] = ["MO", "TU", "WE", "TH", "FR", "SA", "SU"];

const pad = (n: number) => String(n).padStart(2, "0");

export function parseRoutine(clean: string): RoutineRequest | null {
  // "my brief", "the weekly review", "morning brief", or a sentence that starts with it: never "a review of Dune".
  const named =
    /(?:^|\b(?:my|the)\s+)(?:(?:morning|daily)\s+)?brief(?:ing)?\b|\bmorning brief(?:ing)?\b|(?:^|\b(?:my|the)\s+)(?:weekly\s+)?review\b|\bweekly review\b/i.exec(
      clean,
    );
  if (!named) return null;
  const routine = /review/i.test(named[0]) ? "review" : "brief";
  if (/^(?:when|what time|which day)\b/i.test(clean) && /\?$|\bis\b|\bdo(?:es)?\b/i.test(clean)) return { ask: "when" };
  const change: { on?: boolean; time?: string; days?: Weekday[] } = {};
  if (
    /\b(?:turn(?:ed)?\s+(?:\w+\s+){0,3}off|switch\s+(?:\w+\s+){0,3}off|stop|disable|pause|no more|cancel|don't want|do not want)\b/i.test(
      clean,
    )
  )
    change.on = false;
  else if (/\b(?:turn(?:ed)?\s+(?:\w+\s+){0,3}(?:back\s+)?on|switch\s+(?:\w+\s+){0,3}on|back on|resume|restart|enable)\b/i.test(clean))
    change.on = true;
  const clock = clockOf(clean);
  if (clock) {
    let { hour } = clock;
    const { minute, meridiem } = clock;
    if (meridiem === "p" && hour < 12) hour += 12;
    else if (meridiem === "a" && hour === 12) hour = 0;
    // "review at 6" is the evening; "brief at 6" the morning.
    else if (!meridiem && routine === "review" && hour < 12 && hour >= 1) hour += 12;
    if (hour <= 23 && minute <= 59) change.time = `${pad(hour)}:${pad(minute)}`;
  }
  if (/\b(?:on\s+)?(?:week\s?days|working days|workdays)\b|\bmonday\s+to\s+friday\b/i.test(clean)) change.days = ALL.slice(0, 5);
  else if (/\b(?:on\s+)?(?:the\s+)?weekends?\b/i.test(clean)) change.days = ["SA", "SU"];
  else if (/\b(?:every\s?day|daily|each day)\b/i.test(clean)) change.days = [...ALL];
  else {
    const days = [...clean.matchAll(/\b(monday|tuesday|wednesday|thursday|friday|saturday|sunday)s?\b/gi)].map(
      (m) => DAYS[m[1]!.toLowerCase()]!,
    );
    if (days.length > 0) change.days = [...new Set(days)];
  }
  if (change.on === undefined && !change.time && !change.days) return null;
  return { ask: "change", routine, change };
}

/** "at 7:15", "to 6.30pm", "7:15", "7am": the hour, minute and a or p as said. */
function clockOf(clean: string): { hour: number; minute: number; meridiem: string | undefined } | null {
  const found =
    /\b(?:at|to|for)\s+(\d{1,2})(?:[:.h](\d{2}))?\s*(?:([ap])\.?m\.?)?(?=$|[\s,.!?])/i.exec(clean) ??
    /\b(\d{1,2})[:.h](\d{2})\s*(?:([ap])\.?m\.?)?(?=$|[\s,.!?])/i.exec(clean) ??
    /\b(\d{1,2})()\s*([ap])\.?m\.?(?=$|[\s,.!?])/i.exec(clean);
  if (!found) return null;
  return { hour: Number(found[1]), minute: Number(found[2] || 0), meridiem: found[3]?.toLowerCase() };
}

/** What routine_set answered, said back. */
export function routineAnswer(routine: "brief" | "review", output: unknown, zone: string): string {
  const result = output as { on?: boolean; repeats?: string; next?: string; error?: string; warning?: string } | undefined;
  const name = routine === "brief" ? "morning brief" : "weekly review";
  if (!result || result.error) return `I couldn't change your ${name}${result?.error ? `: ${result.error}` : ""}.`;
  if (!result.on) return `Your ${name} is off. Say "turn the ${routine} back on" whenever you want it again.`;
  const warning = result.warning ? " It's saved, but it can't be scheduled right now." : "";
  return `Done: your ${name} now comes ${result.repeats}${result.next ? ` (next: ${result.next.replace("T", " ")}, ${zone})` : ""}.${warning}`;
}

/** schedule_list's routines, said: "Your morning brief comes every day at 08:00; your weekly review is off." */
export function routinesSaid(output: unknown): string {
  const routines = (output as { routines?: Array<{ routine: string; on: boolean; repeats: string }> } | undefined)?.routines ?? [];
  const parts = routines.map((r) => {
    const name = r.routine === "brief" ? "morning brief" : "weekly review";
    return r.on ? `your ${name} comes ${r.repeats}` : `your ${name} is off`;
  });
  if (parts.length === 0) return "I can't read your brief and review settings right now.";
  const said = parts.join("; ");
  return `${said.charAt(0).toUpperCase()}${said.slice(1)}. Say "brief at 7:15 on weekdays" or "turn off the weekly review" to change them.`;
}
