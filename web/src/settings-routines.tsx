// The morning brief and the weekly review: when each comes, on which days, or off (PUT /api/routines/:name,
// agents/schedules/routines.ts). Each is a small form of its own: turning one off or on saves at once; a
// new time or days wait for Save. "Back to the default" appears once one was changed.
import { useState, type FormEvent } from "react";
import { api, type Routine, type RoutineChange } from "./api";
import { ErrorNote } from "./forms";
import { LoadState, useLoaded } from "./loaded";

const DAYS = [
  ["MO", "Mon", "Monday"],
  ["TU", "Tue", "Tuesday"],
  ["WE", "Wed", "Wednesday"],
  ["TH", "Thu", "Thursday"],
  ["FR", "Fri", "Friday"],
  ["SA", "Sat", "Saturday"],
  ["SU", "Sun", "Sunday"],
] as const;
type Day = (typeof DAYS)[number][0];

const TITLES = { brief: "Morning brief", review: "Weekly review" } as const;
const ABOUT = {
  brief: "What's coming up today, what you talked about yesterday, and new mail.",
  review: "What you added to your memory that week.",
} as const;
const DEFAULTS = { brief: { time: "08:00", days: DAYS.map(([d]) => d) as Day[] }, review: { time: "18:00", days: ["SU"] as Day[] } };

/** "Mon 30 Nov, 07:15" on the person's clock. */
function nextTime(iso: string, timeZone: string): string {
  const at = new Date(iso);
  const day = new Intl.DateTimeFormat("en-GB", { timeZone, weekday: "short", day: "numeric", month: "short" }).format(at);
  const time = new Intl.DateTimeFormat("en-GB", { timeZone, hour: "2-digit", minute: "2-digit" }).format(at);
  return `${day.replace(",", "")}, ${time}`;
}

export function RoutineSettings({ timeZone }: { timeZone: string }) {
  const { loaded, setLoaded, reload } = useLoaded(() => api.routines());
  const saved = (routine: Routine) =>
    setLoaded((current) => (current.state === "ready" ? { ...current, [routine.name]: routine } : current));
  return (
    <>
      <h2>Brief and review</h2>
      <p className="muted">Soma writes to you on its own at these times ({timeZone}), on the channels chosen under “Where things go”.</p>
      <LoadState loaded={loaded} what="your brief and review" onRetry={reload} />
      {loaded.state === "ready" && (
        <>
          <RoutineForm key={`brief-${loaded.brief.time}-${loaded.brief.on}`} routine={loaded.brief} timeZone={timeZone} onSaved={saved} />
          <RoutineForm
            key={`review-${loaded.review.time}-${loaded.review.on}`}
            routine={loaded.review}
            timeZone={timeZone}
            onSaved={saved}
          />
        </>
      )}
    </>
  );
}

function RoutineForm({ routine, timeZone, onSaved }: { routine: Routine; timeZone: string; onSaved: (routine: Routine) => void }) {
  const [time, setTime] = useState(routine.time);
  const [days, setDays] = useState<Day[]>(routine.days as Day[]);
  const [saving, setSaving] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const title = TITLES[routine.name];
  const ordered = (list: Day[]) => DAYS.map(([d]) => d).filter((d) => list.includes(d));
  const changed = time !== routine.time || ordered(days).join() !== routine.days.join();
  const save = async (change: RoutineChange) => {
    setSaving(true);
    setError(null);
    try {
      const next = await api.setRoutine(routine.name, change);
      setDays(next.days as Day[]);
      setTime(next.time);
      onSaved(next);
    } catch (e) {
      setError(`Saving failed: ${(e as Error).message}`);
    } finally {
      setSaving(false);
    }
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (days.length === 0) return setError("Choose at least one day.");
    void save({ time, days: ordered(days) });
  };
  const toggle = (day: Day) => setDays((current) => (current.includes(day) ? current.filter((d) => d !== day) : [...current, day]));
  return (
    <form className="routine" aria-label={title} onSubmit={submit}>
      <div className="field-row">
        <h3>{title}</h3>
        <label className="switch">
          <input type="checkbox" checked={routine.on} disabled={saving} onChange={(e) => void save({ on: e.target.checked })} />
          {routine.on ? "On" : "Off"}
        </label>
      </div>
      <p className="muted">{ABOUT[routine.name]}</p>
      {routine.on ? (
        <p>
          Comes {routine.repeats}
          {routine.next && <> · next {nextTime(routine.next, timeZone)}</>}
        </p>
      ) : (
        <p>Off: Soma won't send it.</p>
      )}
      <div className="schedule-edit">
        <label>
          Time
          <input type="time" value={time} required disabled={saving} onChange={(e) => setTime(e.target.value)} />
        </label>
        {routine.name === "review" ? (
          <label>
            Day
            <select value={days[0]} disabled={saving} onChange={(e) => setDays([e.target.value as Day])}>
              {DAYS.map(([day, , long]) => (
                <option key={day} value={day}>
                  {long}
                </option>
              ))}
            </select>
          </label>
        ) : (
          <fieldset className="days">
            <legend>Days</legend>
            {DAYS.map(([day, short, long]) => (
              <label key={day} title={long}>
                <input type="checkbox" checked={days.includes(day)} disabled={saving} onChange={() => toggle(day)} aria-label={long} />
                {short}
              </label>
            ))}
          </fieldset>
        )}
        <button type="submit" className="secondary" disabled={saving || !changed} aria-label={`Save ${title.toLowerCase()}`}>
          {saving ? "Saving…" : routine.on ? "Save" : "Save and turn on"}
        </button>
        {routine.custom && (
          <button type="button" className="secondary" disabled={saving} onClick={() => void save({ on: true, ...DEFAULTS[routine.name] })}>
            Back to the default
          </button>
        )}
      </div>
      {changed && <p className="muted">Not saved yet.</p>}
      <ErrorNote message={error} />
    </form>
  );
}
