// Notifications (Web Push): reminders and replies reach this browser even when Soma is closed. The
// browser is asked for permission only when the person presses the button, never on page load; a
// denial is respected and explained (only the browser's own site settings can undo it). Each browser
// with notifications on is listed with "this device" marked (its endpoint's hash, which the server
// lists instead of the endpoint), a way to remove it, and a test notification. On an iPhone or iPad,
// push needs Soma added to the home screen first (iOS 16.4+), and this section says so there.
import { useEffect, useState } from "react";
import { api, type Me, type PushDevice, type PushState } from "./api";
import { formatWhen } from "./format";
import { ErrorNote } from "./forms";
import { IN_MINI_APP } from "./router";

type Loaded = { step: "loading" } | { step: "ready"; push: PushState; mine: string | null } | { step: "error"; message: string };

/** The browser and system, for the person to tell their devices apart ("Chrome on Android"). */
function deviceLabel(agent = navigator.userAgent): string {
  const browser = /Edg\//.test(agent)
    ? "Edge"
    : /Firefox\//.test(agent)
      ? "Firefox"
      : /(Chrome|Chromium|CriOS)\//.test(agent)
        ? "Chrome"
        : /Safari\//.test(agent)
          ? "Safari"
          : "A browser";
  const system = /Android/.test(agent)
    ? "Android"
    : /iPhone|iPad|iPod/.test(agent)
      ? "iOS"
      : /Mac OS X/.test(agent)
        ? "macOS"
        : /Windows/.test(agent)
          ? "Windows"
          : /CrOS/.test(agent)
            ? "ChromeOS"
            : /Linux/.test(agent)
              ? "Linux"
              : "";
  return system ? `${browser} on ${system}` : browser;
}

const isAppleMobile = () => /iPhone|iPad|iPod/.test(navigator.userAgent);
const installed = () =>
  window.matchMedia?.("(display-mode: standalone)").matches || (navigator as { standalone?: boolean }).standalone === true;
const supported = () => "serviceWorker" in navigator && "PushManager" in window && "Notification" in window;

async function sha256Hex(text: string): Promise<string> {
  const digest = await crypto.subtle.digest("SHA-256", new TextEncoder().encode(text));
  return [...new Uint8Array(digest)].map((b) => b.toString(16).padStart(2, "0")).join("");
}

/** This browser's current subscription, if it has one. */
async function currentSubscription(): Promise<PushSubscription | null> {
  if (!supported()) return null;
  const registration = await navigator.serviceWorker.getRegistration("/");
  return (await registration?.pushManager.getSubscription()) ?? null;
}

function fromBase64Url(value: string): Uint8Array<ArrayBuffer> {
  const text = atob(value.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(text, (c) => c.charCodeAt(0));
}

export function NotificationSettings({ me }: { me: Me }) {
  const timeZone = me.timezone;
  const [state, setState] = useState<Loaded>({ step: "loading" });
  const [busy, setBusy] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const [note, setNote] = useState<string | null>(null);
  const [permission, setPermission] = useState(() => (supported() ? Notification.permission : "default"));

  const load = async () => {
    try {
      const [push, subscription] = await Promise.all([api.push(), currentSubscription()]);
      setState({ step: "ready", push, mine: subscription ? await sha256Hex(subscription.endpoint) : null });
    } catch (e) {
      setState({ step: "error", message: (e as Error).message });
    }
  };
  // biome-ignore lint/correctness/useExhaustiveDependencies: loaded once on mount; later loads follow the person's actions.
  useEffect(() => {
    if (!IN_MINI_APP) void load();
  }, []);

  const turnOn = async (publicKey: string) => {
    setBusy("on");
    setError(null);
    setNote(null);
    try {
      // Asked here, after the person pressed the button: never on page load.
      const answer = await Notification.requestPermission();
      setPermission(answer);
      if (answer === "default") setNote("Notifications were not turned on: the browser's question was closed without an answer.");
      if (answer !== "granted") return;
      const registration = await navigator.serviceWorker.ready;
      const subscription =
        (await registration.pushManager.getSubscription()) ??
        (await registration.pushManager.subscribe({ userVisibleOnly: true, applicationServerKey: fromBase64Url(publicKey) }));
      await api.subscribePush(subscription.toJSON(), deviceLabel());
      await load();
      setNote("Notifications are on in this browser.");
    } catch (e) {
      setError(`Turning notifications on failed: ${(e as Error).message}`);
    } finally {
      setBusy(null);
    }
  };

  const remove = async (device: PushDevice, mine: boolean) => {
    setBusy(device.id);
    setError(null);
    setNote(null);
    try {
      await api.removePushDevice(device.id);
      if (mine) await (await currentSubscription())?.unsubscribe();
      await load();
    } catch (e) {
      setError(`Removing ${device.label} failed: ${(e as Error).message}`);
    } finally {
      setBusy(null);
    }
  };

  const test = async () => {
    setBusy("test");
    setError(null);
    setNote(null);
    try {
      const report = await api.testPush();
      setNote(
        report.sent > 0
          ? `A test notification went to ${report.sent} ${report.sent === 1 ? "device" : "devices"}.`
          : "No device took the test notification.",
      );
      await load();
    } catch (e) {
      setError(`The test failed: ${(e as Error).message}`);
    } finally {
      setBusy(null);
    }
  };

  // Inside Telegram, Telegram itself is the channel: a browser's notifications are turned on in the web app.
  if (IN_MINI_APP)
    return (
      <>
        <h2>Notifications</h2>
        <p className="muted">
          Here, Soma reaches you in this chat. To get notifications in a browser too, turn them on in Soma's web app there.
        </p>
        <WhereThingsGo me={me} />
      </>
    );
  return (
    <>
      <h2>Notifications</h2>
      <p className="muted">Reminders, and replies that finish while you're away, can reach this browser even when Soma is closed.</p>
      {state.step === "loading" && <p className="muted">Loading notifications…</p>}
      {state.step === "error" && <ErrorNote message={`Notifications could not be loaded: ${state.message}`} />}
      {state.step === "ready" && (
        <Devices state={state} permission={permission} busy={busy} timeZone={timeZone} onTurnOn={turnOn} onRemove={remove} onTest={test} />
      )}
      {note && (
        <p className="muted" role="status">
          {note}
        </p>
      )}
      <ErrorNote message={error} />
      {state.step === "ready" && state.push.devices.length === 0 && !me.telegram.linked && (
        <p className="notice">
          Soma cannot reach you outside this page yet: link Telegram or turn on notifications. Until then, reminders that come due are
          listed as missed on the Reminders page.
        </p>
      )}
      <WhereThingsGo me={me} />
    </>
  );
}

const KINDS = [
  { kind: "reminder", label: "Reminders" },
  { kind: "brief", label: "Morning brief" },
  { kind: "review", label: "Weekly review" },
] as const;

/** Where each kind of message Soma sends on its own goes; every channel the person has by default. */
function WhereThingsGo({ me }: { me: Me }) {
  const [choices, setChoices] = useState(me.notify);
  const [saving, setSaving] = useState<string | null>(null);
  const [error, setError] = useState<string | null>(null);
  const save = async (change: Partial<Me["notify"]>) => {
    const key = Object.keys(change)[0] ?? "";
    setSaving(key);
    setError(null);
    try {
      setChoices(await api.setNotify(change));
    } catch (e) {
      setError(`Saving failed: ${(e as Error).message}`);
    } finally {
      setSaving(null);
    }
  };
  return (
    <fieldset className="where-things-go">
      <legend>Where things go</legend>
      {KINDS.map(({ kind, label }) => (
        <label key={kind} className="field-row">
          <span>{label}</span>
          <select value={choices[kind]} disabled={saving === kind} onChange={(e) => void save({ [kind]: e.target.value as "all" })}>
            <option value="all">Telegram and notifications</option>
            <option value="telegram">Telegram only</option>
            <option value="push">Notifications only</option>
          </select>
        </label>
      ))}
      <label className="field-row">
        <span>Replies that finish while you're away</span>
        <select value={choices.reply} disabled={saving === "reply"} onChange={(e) => void save({ reply: e.target.value as "all" | "off" })}>
          <option value="all">Notify me</option>
          <option value="off">Don't notify me</option>
        </select>
      </label>
      <p className="muted">
        A choice that reaches none of your channels falls back to every one you have: a reminder is never lost to a setting.
      </p>
      <ErrorNote message={error} />
    </fieldset>
  );
}

function Devices(props: {
  state: Extract<Loaded, { step: "ready" }>;
  permission: NotificationPermission;
  busy: string | null;
  timeZone: string;
  onTurnOn: (publicKey: string) => Promise<void>;
  onRemove: (device: PushDevice, mine: boolean) => Promise<void>;
  onTest: () => Promise<void>;
}) {
  const { push, mine } = props.state;
  const here = push.devices.find((d) => d.endpointHash === mine);
  return (
    <>
      {!push.available && <p>Notifications are not set up on this Soma (its operator sets VAPID keys: npm run push:keys).</p>}
      {push.available && !supported() && isAppleMobile() && !installed() && (
        <p className="notice">
          On an iPhone or iPad, notifications need Soma on your home screen: tap Share, then “Add to Home Screen”, and open Soma from there
          (iOS 16.4 or later).
        </p>
      )}
      {push.available && !supported() && !(isAppleMobile() && !installed()) && <p>This browser cannot show notifications from websites.</p>}
      {push.available && supported() && props.permission === "denied" && (
        <p className="notice" role="status">
          Notifications are blocked for Soma in this browser. Soma won't ask again; to allow them, change this site's notification
          permission in your browser's settings, then come back here.
        </p>
      )}
      {push.available && supported() && props.permission !== "denied" && !here && (
        <button type="button" disabled={props.busy === "on"} onClick={() => void props.onTurnOn(push.publicKey ?? "")}>
          {props.busy === "on" ? "Turning on…" : "Turn on notifications in this browser"}
        </button>
      )}
      {push.devices.length === 0 ? (
        <p>No device has notifications on.</p>
      ) : (
        <ul className="connected-apps" aria-label="Devices with notifications">
          {push.devices.map((device) => {
            const isMine = device.endpointHash === mine;
            return (
              <li key={device.id} className="connected-app">
                <div>
                  <strong>{device.label}</strong>
                  {isMine && <span className="device-mine"> (this device)</span>}
                  <span className="muted">
                    {" "}
                    · on since {formatWhen(device.createdAt, props.timeZone)} ·{" "}
                    {device.lastUsedAt ? `last notified ${formatWhen(device.lastUsedAt, props.timeZone)}` : "not notified yet"}
                  </span>
                </div>
                <button
                  type="button"
                  className="secondary"
                  disabled={props.busy === device.id}
                  onClick={() => void props.onRemove(device, isMine)}
                >
                  {props.busy === device.id ? "Removing…" : `Remove ${device.label}`}
                </button>
              </li>
            );
          })}
        </ul>
      )}
      {push.devices.length > 0 && (
        <button type="button" className="secondary" disabled={props.busy === "test"} onClick={() => void props.onTest()}>
          {props.busy === "test" ? "Sending…" : "Send a test notification"}
        </button>
      )}
    </>
  );
}
