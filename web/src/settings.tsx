// Linked accounts, sign out, delete everything.
import { api, type Me } from "./api";

export function SettingsPage({ me }: { me: Me }) {
  const deleteAll = async () => {
    if (!window.confirm("Delete all your memories, your conversation and your account? This cannot be undone.")) return;
    await api.deleteAccount();
    window.location.assign("/login");
  };
  return (
    <section className="settings">
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
