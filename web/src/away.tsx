// "While you were away": reminders of the last week that reached no channel (no Telegram, no
// notifications on) are shown at the top of the chat, where a person without any channel comes back
// to Soma, with the way to be reached next time. Dismissing them is remembered in this browser (the
// Reminders page keeps listing them as missed). While the list loads, or when it cannot be read, the
// chat shows nothing extra: the Reminders page is where their loading and error states live.
import { useEffect, useState } from "react";
import { api, type Reminder } from "./api";
import { formatWhen } from "./format";
import { Link } from "./router";

const DISMISSED_KEY = "soma.away.dismissed";
const WEEK_MS = 7 * 24 * 3600_000;

function readDismissed(): string[] {
  try {
    const kept = JSON.parse(localStorage.getItem(DISMISSED_KEY) ?? "[]");
    return Array.isArray(kept) ? kept.filter((id): id is string => typeof id === "string") : [];
  } catch {
    return []; // storage denied (a cross-site frame) or unreadable: nothing dismissed yet
  }
}

function keepDismissed(ids: string[]) {
  try {
    // Only the last hundred: older ones have left the week anyway.
    localStorage.setItem(DISMISSED_KEY, JSON.stringify(ids.slice(-100)));
  } catch {
    // Storage denied: dismissed for this page's life only.
  }
}

/** Missed reminders of the last week this browser has not dismissed, oldest first. */
function missedSince(past: readonly Reminder[], now: number, dismissed: readonly string[]): Reminder[] {
  return past
    .filter((r) => r.status === "undeliverable" && now - Date.parse(r.at) < WEEK_MS && !dismissed.includes(r.id))
    .sort((a, b) => a.at.localeCompare(b.at));
}

export function AwayNotice({ timeZone }: { timeZone: string }) {
  const [missed, setMissed] = useState<Reminder[]>([]);
  useEffect(() => {
    let current = true;
    api.reminders().then(
      ({ past }) => current && setMissed(missedSince(past, Date.now(), readDismissed())),
      () => {},
    );
    return () => {
      current = false;
    };
  }, []);
  if (missed.length === 0) return null;
  const dismiss = () => {
    keepDismissed([...readDismissed(), ...missed.map((r) => r.id)]);
    setMissed([]);
  };
  return (
    <section className="notice away" aria-labelledby="away-title">
      <h2 id="away-title">While you were away</h2>
      <ul aria-label="Missed reminders">
        {missed.map((reminder) => (
          <li key={reminder.id}>
            <span className="reminder-text">{reminder.text}</span> <span className="muted">· {formatWhen(reminder.at, timeZone)}</span>
          </li>
        ))}
      </ul>
      <p>
        Soma could not reach you for {missed.length === 1 ? "this reminder" : "these reminders"}.{" "}
        <Link to="/app/settings">Turn on notifications or link Telegram</Link> to get them on time.
      </p>
      <button type="button" className="secondary" onClick={dismiss}>
        Dismiss
      </button>
    </section>
  );
}
