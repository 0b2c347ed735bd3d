// Timezone, linked accounts, sign out, delete everything.
import { useState } from "react";
import { api, type Me } from "./api";

/** The browser's own zone (what the select offers first). */
export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/**
 * On a first sign-in the person's zone is still the default UTC: take the browser's instead, once per
 * browser (so choosing UTC in Settings later sticks). Returns the person as it now is.
 */
export async function adoptBrowserTimeZone(me: Me): Promise<Me> {
  const zone = browserTimeZone();
  if (me.timezone !== "UTC" || zone === "UTC" || localStorage.getItem("soma.timezone-adopted")) return me;
  localStorage.setItem("soma.timezone-adopted", "1");
  const { timezone } = await api.setTimezone(zone);
  return { ...me, timezone };
}

function TimezoneSetting({ me }: { me: Me }) {
  const zones = Intl.supportedValuesOf("timeZone");
  const [saved, setSaved] = useState(me.timezone);
  const [choice, setChoice] = useState(me.timezone);
  const [state, setState] = useState<{ saving: boolean; error: string | null }>({ saving: false, error: null });
  const options = [...new Set([browserTimeZone(), saved, "UTC", ...zones])];
  const save = async () => {
    setState({ saving: true, error: null });
    try {
      setSaved((await api.setTimezone(choice)).timezone);
      localStorage.setItem("soma.timezone-adopted", "1");
      setState({ saving: false, error: null });
    } catch (error) {
      setState({ saving: false, error: (error as Error).message });
    }
  };
  return (
    <>
      <h2>Timezone</h2>
      <p className="muted">Reminders, the morning brief (08:00) and the weekly review (Sunday 18:00) follow it. Now: {saved}.</p>
      <div className="filters">
        <select aria-label="Timezone" value={choice} onChange={(e) => setChoice(e.target.value)} disabled={state.saving}>
          {options.map((zone) => (
            <option key={zone} value={zone}>
              {zone === browserTimeZone() ? `${zone} (this device)` : zone}
            </option>
          ))}
        </select>
        <button className="secondary" onClick={() => void save()} disabled={state.saving || choice === saved}>
          {state.saving ? "Saving…" : "Save"}
        </button>
      </div>
      {state.error && <p className="error">{state.error}</p>}
    </>
  );
}

export function SettingsPage({ me }: { me: Me }) {
  const deleteAll = async () => {
    if (!window.confirm("Delete all your memories, your conversation and your account? This cannot be undone.")) return;
    await api.deleteAccount();
    window.location.assign("/login");
  };
  return (
    <section className="settings">
      <TimezoneSetting me={me} />
      <h2>Telegram</h2>
      <p>{me.telegram.linked ? "Linked." : me.telegram.bot ? `Not linked. Send /start to @${me.telegram.bot}.` : "Not linked."}</p>
      <h2>Google · Gmail</h2>
      <p>{me.google.connected ? `Connected as ${me.google.email}.` : "Not connected."}</p>
      {me.google.available && !me.google.connected && (
        <a className="button secondary" href="/auth/google/start?intent=connect">Connect Gmail (read-only)</a>
      )}
      <h2>Session</h2>
      <form method="post" action="/logout">
        <button type="submit" className="secondary">Sign out</button>
      </form>
      <h2>Your data</h2>
      <button className="danger" onClick={() => void deleteAll()}>Delete all my data</button>
    </section>
  );
}
