// Connected apps: the AI apps (Claude, ChatGPT, Cursor…) the person let reach their memory through MCP
// (GET /api/apps), with what each may do, since when and when it last came; Disconnect revokes it at
// once (DELETE /api/apps/:id: its next call is refused). Also where to point a new app: <origin>/mcp.
import { useEffect, useState } from "react";
import { api, type ConnectedApp } from "./api";
import { formatWhen } from "./format";
import { ErrorNote } from "./forms";

type AppsState = { step: "loading" } | { step: "ready"; apps: ConnectedApp[] } | { step: "error"; message: string };

export function ConnectedApps({ timeZone }: { timeZone: string }) {
  const [state, setState] = useState<AppsState>({ step: "loading" });
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  useEffect(() => {
    api
      .apps()
      .then((apps) => setState({ step: "ready", apps }))
      .catch((e: Error) => setState({ step: "error", message: e.message }));
  }, []);
  const disconnect = async (app: ConnectedApp) => {
    setBusy(app.id);
    setError(null);
    try {
      await api.disconnectApp(app.id);
      setState((s) => (s.step === "ready" ? { step: "ready", apps: s.apps.filter((a) => a.id !== app.id) } : s));
    } catch (e) {
      setError(`Disconnecting ${app.name} failed: ${(e as Error).message}`);
    } finally {
      setBusy(null);
    }
  };
  return (
    <>
      <h2>Connected apps</h2>
      <p className="muted">
        Other AI apps can search and add to your memory through MCP. Add <code>{`${window.location.origin}/mcp`}</code> as a connector in
        Claude, ChatGPT, Cursor or any MCP client; you will be asked here what it may do.
      </p>
      {state.step === "loading" && <p className="muted">Loading connected apps…</p>}
      {state.step === "error" && <ErrorNote message={`Connected apps could not be loaded: ${state.message}`} />}
      {state.step === "ready" && state.apps.length === 0 && <p>No apps are connected.</p>}
      {state.step === "ready" && state.apps.length > 0 && (
        <ul className="connected-apps" aria-label="Connected apps">
          {state.apps.map((app) => (
            <li key={app.id} className="connected-app">
              <div>
                <strong>{app.name}</strong>
                <span className="muted">
                  {" "}
                  · {app.canWrite ? "reads and adds memories" : "reads memories"} · connected {formatWhen(app.connectedAt, timeZone)} ·{" "}
                  {app.lastUsedAt ? `last used ${formatWhen(app.lastUsedAt, timeZone)}` : "not used yet"}
                </span>
              </div>
              <button type="button" className="secondary" disabled={busy === app.id} onClick={() => void disconnect(app)}>
                {busy === app.id ? "Disconnecting…" : `Disconnect ${app.name}`}
              </button>
            </li>
          ))}
        </ul>
      )}
      <ErrorNote message={error} />
    </>
  );
}
