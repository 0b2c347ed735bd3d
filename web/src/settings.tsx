// Timezone, linked Telegram and Google, notifications, connected MCP apps, export and import, sign out, delete everything.
import { useState, type FormEvent } from "react";
import { api, leave, type Me } from "./api";
import { ErrorNote } from "./forms";
import { IN_MINI_APP } from "./router";
import { warnByTouch } from "./telegram";
import { ConnectedApps } from "./settings-apps";
import { NotificationSettings } from "./settings-notifications";
import { RoutineSettings } from "./settings-routines";
import { DataSettings } from "./settings-data";
import { browserTimeZone, TIMEZONE_ADOPTED_KEY } from "./timezone";

/** What the person types to delete everything: deliberate, never a slip of the finger. */
const DELETE_PHRASE = "delete everything";

function TimezoneSetting({ me }: { me: Me }) {
  const zones = Intl.supportedValuesOf("timeZone");
  const device = browserTimeZone();
  const [saved, setSaved] = useState(me.timezone);
  const [choice, setChoice] = useState(me.timezone);
  const [state, setState] = useState<{ saving: boolean; error: string | null; done: boolean }>({ saving: false, error: null, done: false });
  const options = [...new Set([device, saved, "UTC", ...zones])];
  const save = async (event: FormEvent) => {
    event.preventDefault();
    setState({ saving: true, error: null, done: false });
    try {
      setSaved((await api.setTimezone(choice)).timezone);
      localStorage.setItem(TIMEZONE_ADOPTED_KEY, "1");
      setState({ saving: false, error: null, done: true });
    } catch (error) {
      setState({ saving: false, error: (error as Error).message, done: false });
    }
  };
  return (
    <>
      <h2>Timezone</h2>
      <p className="muted">Reminders, the morning brief and the weekly review follow it. Now: {saved}.</p>
      <form className="filters" onSubmit={(e) => void save(e)}>
        <select
          aria-label="Timezone"
          value={choice}
          onChange={(e) => {
            setChoice(e.target.value);
            setState((s) => ({ ...s, done: false }));
          }}
          disabled={state.saving}
        >
          {options.map((zone) => (
            <option key={zone} value={zone}>
              {zone === device ? `${zone} (this device)` : zone}
            </option>
          ))}
        </select>
        <button type="submit" className="secondary" disabled={state.saving || choice === saved}>
          {state.saving ? "Saving…" : "Save"}
        </button>
      </form>
      {state.done && (
        <p className="muted" role="status">
          Saved: times now follow {saved}.
        </p>
      )}
      <ErrorNote message={state.error} />
    </>
  );
}

function LinkedAccounts({ me }: { me: Me }) {
  const bot = me.telegram.bot;
  return (
    <>
      <h2>Telegram</h2>
      {me.telegram.linked && IN_MINI_APP ? (
        <p>Linked: this is Soma's memory center inside your Telegram chat with it.</p>
      ) : me.telegram.linked ? (
        <p>
          Linked. Talk to Soma at{" "}
          {bot ? (
            <a href={`https://t.me/${bot}`} target="_blank" rel="noreferrer">
              @{bot}
            </a>
          ) : (
            "its bot"
          )}
          ; send <code>/login</code> there for a link that signs you in here.
        </p>
      ) : (
        <p>
          Not linked. This account began on the web; a Telegram account is linked when it begins with the bot.
          {bot && (
            <>
              {" "}
              Soma on Telegram is{" "}
              <a href={`https://t.me/${bot}`} target="_blank" rel="noreferrer">
                @{bot}
              </a>
              .
            </>
          )}
        </p>
      )}
      <h2>Google · Gmail</h2>
      {me.google.connected ? (
        <p>Connected: Soma reads {me.google.email ?? "your mailbox"} (read-only).</p>
      ) : me.google.available && IN_MINI_APP ? (
        <p className="muted">Not connected. Connect Gmail from Soma's web app in a browser (Google does not sign in inside Telegram).</p>
      ) : me.google.available ? (
        <>
          <p className="muted">
            Not connected. Connect your mailbox and Soma learns from your mail (read-only; you can delete it all here).
          </p>
          <a className="button secondary inline" href="/auth/google/start?intent=connect">
            Connect Gmail (read-only)
          </a>
        </>
      ) : (
        <p className="muted">Not connected. Google is not set up on this server.</p>
      )}
    </>
  );
}

function DeleteEverything() {
  const [typed, setTyped] = useState("");
  const [state, setState] = useState<{ deleting: boolean; error: string | null }>({ deleting: false, error: null });
  const confirmed = typed.trim().toLowerCase() === DELETE_PHRASE;
  const remove = async (event: FormEvent) => {
    event.preventDefault();
    if (!confirmed) return;
    warnByTouch();
    setState({ deleting: true, error: null });
    try {
      await api.deleteAccount();
      leave();
    } catch (error) {
      setState({ deleting: false, error: (error as Error).message });
    }
  };
  return (
    <>
      <h2>Delete everything</h2>
      <p className="muted">
        Your memories, facts, reminders, the conversation, the Gmail connection and your account go for good. This cannot be undone;
        download your data first if you want to keep it.
      </p>
      <form className="danger-zone" onSubmit={(e) => void remove(e)} aria-label="Delete everything">
        <label>
          Type “{DELETE_PHRASE}” to confirm
          <input value={typed} onChange={(e) => setTyped(e.target.value)} autoComplete="off" spellCheck={false} disabled={state.deleting} />
        </label>
        <button type="submit" className="danger" disabled={!confirmed || state.deleting}>
          {state.deleting ? "Deleting…" : "Delete all my data"}
        </button>
      </form>
      <ErrorNote message={state.error && `Deleting failed: ${state.error}`} />
    </>
  );
}

export function SettingsPage({ me }: { me: Me }) {
  return (
    <section className="settings" aria-label="Settings">
      <TimezoneSetting me={me} />
      <LinkedAccounts me={me} />
      <RoutineSettings timeZone={me.timezone} />
      <NotificationSettings me={me} />
      <ConnectedApps timeZone={me.timezone} />
      <DataSettings />
      {/* Inside Telegram the session is the Mini App's own: it ends when Telegram closes it. */}
      {!IN_MINI_APP && (
        <>
          <h2>Session</h2>
          <form method="post" action="/logout">
            <button type="submit" className="secondary">
              Sign out
            </button>
          </form>
        </>
      )}
      <DeleteEverything />
    </section>
  );
}
