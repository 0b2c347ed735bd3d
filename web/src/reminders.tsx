// The person's reminders in their own timezone: upcoming ones (soonest first), which they can cancel
// after saying so, repeating ones (schedules.tsx), and past ones with what became of them (one that
// reached no channel says so: it is where a person without Telegram or notifications finds it). A reminder already being sent cannot be
// cancelled: the server's 409 is shown as it says it.
import { useState } from "react";
import { LoadState, useLoaded } from "./loaded";
import { api, type Reminder, type ReminderStatus } from "./api";
import { formatFull, formatWhen } from "./format";
import { Confirm, ErrorNote } from "./forms";
import { Link } from "./router";
import { Schedules } from "./schedules";

const STATUS: Record<ReminderStatus, { label: string; tone: "" | "warn" | "ok" }> = {
  scheduled: { label: "scheduled", tone: "" },
  delivering: { label: "being sent", tone: "" },
  delivered: { label: "sent", tone: "ok" },
  undeliverable: { label: "missed: no Telegram and no notifications on", tone: "warn" },
  cancelled: { label: "cancelled", tone: "" },
};

function When({ at, timeZone }: { at: string; timeZone: string }) {
  return (
    <time dateTime={at} title={formatFull(at, timeZone)}>
      {formatWhen(at, timeZone)}
    </time>
  );
}

function UpcomingItem({
  reminder,
  timeZone,
  onCancelled,
}: {
  reminder: Reminder;
  timeZone: string;
  onCancelled: (reminder: Reminder) => void;
}) {
  const [mode, setMode] = useState<"view" | "confirm" | "cancelling">("view");
  const [error, setError] = useState<string | null>(null);
  // One time of a repeating reminder: skipping it plans the next (the schedule stays).
  const repeats = reminder.scheduleId !== null;
  const cancel = async () => {
    setMode("cancelling");
    try {
      onCancelled((await api.cancelReminder(reminder.id)).reminder);
    } catch (failure) {
      setMode("view");
      setError(`Could not cancel it: ${(failure as Error).message}`);
    }
  };
  return (
    <li data-testid="reminder">
      <div className="memory-main">
        <span className="reminder-text">{reminder.text}</span>
        <p className="muted source">
          <time dateTime={reminder.at}>{formatFull(reminder.at, timeZone)}</time>
        </p>
        <ErrorNote message={error} />
      </div>
      {mode === "view" ? (
        <button
          type="button"
          className="secondary"
          onClick={() => {
            setError(null);
            setMode("confirm");
          }}
          aria-label={repeats ? `Skip this time of “${reminder.text}”` : `Cancel reminder “${reminder.text}”`}
        >
          {repeats ? "Skip" : "Cancel"}
        </button>
      ) : (
        <Confirm
          label={repeats ? `Skip this time of “${reminder.text}”?` : `Cancel “${reminder.text}”?`}
          busy={mode === "cancelling"}
          confirmLabel={repeats ? "Skip this time" : "Cancel reminder"}
          busyLabel="Cancelling…"
          onConfirm={() => void cancel()}
          onKeep={() => setMode("view")}
        >
          {repeats ? "It will not be sent this time; it repeats as before." : "It will not be sent. This cannot be undone."}
        </Confirm>
      )}
    </li>
  );
}

export function RemindersPage({ timeZone }: { timeZone: string }) {
  const { loaded, setLoaded, reload, refresh } = useLoaded(api.reminders);
  const [notice, setNotice] = useState<string | null>(null);
  const cancelled = (reminder: Reminder) => {
    setNotice(`Cancelled “${reminder.text}”. It will not be sent.`);
    setLoaded((l) =>
      l.state === "ready" ? { ...l, upcoming: l.upcoming.filter((r) => r.id !== reminder.id), past: [reminder, ...l.past] } : l,
    );
  };

  const zone = (
    <p className="muted lead-in">
      Times are in {timeZone} (<Link to="/app/settings">change</Link>). Ask Soma in the chat to remind you of something.
    </p>
  );
  if (loaded.state !== "ready")
    return (
      <section className="reminders" aria-label="Reminders">
        {zone}
        <LoadState loaded={loaded} what="reminders" onRetry={reload} />
      </section>
    );
  return (
    <section className="reminders" aria-label="Reminders">
      {zone}
      {notice && (
        <div className="toast" role="status">
          <span>{notice}</span>
          <button type="button" className="secondary" aria-label="Dismiss" onClick={() => setNotice(null)}>
            ×
          </button>
        </div>
      )}
      <h2 id="upcoming">Upcoming</h2>
      {loaded.upcoming.length === 0 ? (
        <p className="muted empty">Nothing coming up. Say “remind me to call mum on Sunday at 10” in the chat.</p>
      ) : (
        <ul className="memory-list reminder-list" aria-labelledby="upcoming">
          {loaded.upcoming.map((reminder) => (
            <UpcomingItem key={reminder.id} reminder={reminder} timeZone={timeZone} onCancelled={cancelled} />
          ))}
        </ul>
      )}
      <Schedules schedules={loaded.schedules} timeZone={timeZone} onChange={refresh} />
      <h2 id="past">Past</h2>
      {loaded.past.length === 0 ? (
        <p className="muted empty">No past reminders yet.</p>
      ) : (
        <ul className="memory-list reminder-list" aria-labelledby="past">
          {loaded.past.map((reminder) => (
            <li key={reminder.id} data-testid="reminder">
              <div className="memory-main">
                <span className="reminder-text">{reminder.text}</span>
                <p className="muted source">
                  <When at={reminder.at} timeZone={timeZone} />
                </p>
              </div>
              <span className={`badge ${STATUS[reminder.status]?.tone ?? ""}`}>{STATUS[reminder.status]?.label ?? reminder.status}</span>
            </li>
          ))}
        </ul>
      )}
    </section>
  );
}
