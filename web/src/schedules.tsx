// Repeating reminders on the Reminders page: each with its rule in words ("every week on Monday at
// 09:00"), its next occurrences in the person's timezone, and pause, resume, edit (its words and time
// of day) and delete (after saying so). A paused one keeps its rule and sends nothing until resumed.
import { useState } from "react";
import { api, type Schedule } from "./api";
import { formatFull } from "./format";
import { Confirm, ErrorNote } from "./forms";

function ScheduleItem({ schedule, timeZone, onChange }: { schedule: Schedule; timeZone: string; onChange: () => void }) {
  const [mode, setMode] = useState<"view" | "confirm" | "busy" | "edit">("view");
  const [text, setText] = useState(schedule.text);
  const [time, setTime] = useState(schedule.start.slice(11, 16));
  const [error, setError] = useState<string | null>(null);
  const act = async (work: () => Promise<unknown>, failed: string) => {
    setMode("busy");
    setError(null);
    try {
      await work();
      onChange();
    } catch (failure) {
      setError(`${failed}: ${(failure as Error).message}`);
    } finally {
      setMode("view");
    }
  };
  const paused = schedule.status === "paused";
  return (
    <li data-testid="schedule">
      <div className="memory-main">
        <span className="reminder-text">{schedule.text}</span>
        <p className="muted source">
          {schedule.repeats}
          {paused ? " · paused" : ""}
        </p>
        {!paused && schedule.upcoming.length > 0 && (
          <p className="muted source">
            Next:{" "}
            {schedule.upcoming.map((at, i) => (
              <span key={at}>
                {i > 0 ? ", " : ""}
                <time dateTime={at}>{formatFull(at, timeZone)}</time>
              </span>
            ))}
          </p>
        )}
        <ErrorNote message={error} />
      </div>
      {mode === "edit" ? (
        <form
          className="schedule-edit"
          aria-label={`Edit “${schedule.text}”`}
          onSubmit={(e) => {
            e.preventDefault();
            void act(() => api.editSchedule(schedule.id, { text, time }), "Could not save it");
          }}
        >
          <label>
            What <input value={text} onChange={(e) => setText(e.target.value)} required maxLength={1000} />
          </label>
          <label>
            Time <input type="time" value={time} onChange={(e) => setTime(e.target.value)} required />
          </label>
          <div className="actions">
            <button type="submit">Save</button>
            <button type="button" className="secondary" onClick={() => setMode("view")}>
              Keep as it was
            </button>
          </div>
        </form>
      ) : mode === "confirm" ? (
        <Confirm
          label={`Delete “${schedule.text}”?`}
          busy={false}
          confirmLabel="Delete repeating reminder"
          busyLabel="Deleting…"
          onConfirm={() => void act(() => api.deleteSchedule(schedule.id), "Could not delete it")}
          onKeep={() => setMode("view")}
        >
          It stops repeating, and nothing more is sent.
        </Confirm>
      ) : (
        <div className="actions">
          <button
            type="button"
            className="secondary"
            disabled={mode === "busy"}
            onClick={() => void act(() => api.pauseSchedule(schedule.id, !paused), paused ? "Could not resume it" : "Could not pause it")}
            aria-label={`${paused ? "Resume" : "Pause"} “${schedule.text}”`}
          >
            {paused ? "Resume" : "Pause"}
          </button>
          <button
            type="button"
            className="secondary"
            disabled={mode === "busy"}
            onClick={() => {
              setText(schedule.text);
              setTime(schedule.start.slice(11, 16));
              setMode("edit");
            }}
            aria-label={`Edit “${schedule.text}”`}
          >
            Edit
          </button>
          <button
            type="button"
            className="secondary"
            disabled={mode === "busy"}
            onClick={() => setMode("confirm")}
            aria-label={`Delete “${schedule.text}”`}
          >
            Delete
          </button>
        </div>
      )}
    </li>
  );
}

export function Schedules({ schedules, timeZone, onChange }: { schedules: Schedule[]; timeZone: string; onChange: () => void }) {
  return (
    <>
      <h2 id="repeating">Repeating</h2>
      {schedules.length === 0 ? (
        <p className="muted empty">Nothing repeats yet. Say “remind me every Monday at 9 to water the plants” in the chat.</p>
      ) : (
        <ul className="memory-list reminder-list" aria-labelledby="repeating">
          {schedules.map((schedule) => (
            <ScheduleItem key={schedule.id} schedule={schedule} timeZone={timeZone} onChange={onChange} />
          ))}
        </ul>
      )}
    </>
  );
}
