// The app shell: who is signed in, the top bar, and the page for the path. Each page is its own chunk
// (React.lazy): /app loads the chat and nothing of the other pages until they are opened.
import { Component, lazy, StrictMode, Suspense, useEffect, useState, type ReactNode } from "react";
import { createRoot } from "react-dom/client";
import { api, type Me } from "./api";
import { registerServiceWorker, useOnline } from "./pwa";
import { href, IN_MINI_APP, Link, useLocation } from "./router";
import { adoptBrowserTimeZone } from "./timezone";

const loadChat = () => import("./chat");
// The chat is the page most visits open: fetch its chunk now, alongside /api/me, not after it. The Mini
// App has no chat page (the chat is Telegram's own): it loads its own chunk instead.
if (!IN_MINI_APP && !window.location.pathname.startsWith("/app/")) void loadChat();
const miniApp = IN_MINI_APP ? import("./mini-app") : null;
const ChatPage = lazy(() => loadChat().then((m) => ({ default: m.ChatPage })));
const MemoriesPage = lazy(() => import("./memories").then((m) => ({ default: m.MemoriesPage })));
const MemoryPage = lazy(() => import("./memory-detail").then((m) => ({ default: m.MemoryPage })));
const FactsPage = lazy(() => import("./facts").then((m) => ({ default: m.FactsPage })));
const RemindersPage = lazy(() => import("./reminders").then((m) => ({ default: m.RemindersPage })));
const SettingsPage = lazy(() => import("./settings").then((m) => ({ default: m.SettingsPage })));

const PAGES = [
  { path: "/app", label: "Chat" },
  { path: "/app/memories", label: "Memories" },
  { path: "/app/facts", label: "Facts" },
  { path: "/app/reminders", label: "Reminders" },
  { path: "/app/settings", label: "Settings" },
].filter((page) => !IN_MINI_APP || page.path !== "/app");

/** Inside Telegram: signing in with the launch data (null until done), or why it did not. */
type MiniAppState = { step: "starting" } | { step: "ready" } | { step: "refused"; title: string; message: string };

/** The Mini App's own sign-in before anything else: until it is done no call is made. */
function useMiniApp(): MiniAppState {
  const [state, setState] = useState<MiniAppState>({ step: IN_MINI_APP ? "starting" : "ready" });
  useEffect(() => {
    if (!miniApp) return;
    const ended = () =>
      setState({ step: "refused", title: "Your session ended", message: "Close Soma and open it again from the chat in Telegram." });
    miniApp
      .then((module) => module.startMiniApp(ended))
      .then(
        (started) => setState(started.ok ? { step: "ready" } : { step: "refused", title: started.title, message: started.message }),
        (error: Error) => setState({ step: "refused", title: "Soma could not start", message: error.message }),
      );
  }, []);
  return state;
}

/** Why the Mini App shows nothing of anyone's: a refused launch, a session that ended. */
function MiniAppRefusal({ title, message }: { title: string; message: string }) {
  return (
    <main className="card centered-card" aria-labelledby="refusal-title">
      <h1 id="refusal-title">{title}</h1>
      <p className="lead" role="alert">
        {message}
      </p>
      <button type="button" onClick={() => void miniApp?.then((module) => module.closeMiniApp())}>
        Close
      </button>
    </main>
  );
}

/** A page that failed to load (its chunk, after a deploy) or to render shows why, not a blank screen. */
class PageBoundary extends Component<{ children: ReactNode; resetKey: string }, { error: Error | null; key: string }> {
  override state = { error: null as Error | null, key: this.props.resetKey };
  static getDerivedStateFromError(error: Error) {
    return { error };
  }
  static getDerivedStateFromProps(props: { resetKey: string }, state: { error: Error | null; key: string }) {
    return props.resetKey === state.key ? null : { error: null, key: props.resetKey };
  }
  override render() {
    if (!this.state.error) return this.props.children;
    return (
      <div className="notice" role="alert">
        <p>This page could not be shown: {this.state.error.message}</p>
        <button type="button" className="secondary" onClick={() => window.location.reload()}>
          Reload
        </button>
      </div>
    );
  }
}

function Page({ me }: { me: Me }) {
  const { path, search } = useLocation();
  const memory = search.get("memory");
  if (path === "/app/memories") return memory ? <MemoryPage id={memory} timeZone={me.timezone} /> : <MemoriesPage timeZone={me.timezone} />;
  if (path === "/app/facts") return <FactsPage timeZone={me.timezone} />;
  if (path === "/app/reminders") return <RemindersPage timeZone={me.timezone} />;
  if (path === "/app/settings") return <SettingsPage me={me} />;
  return <ChatPage timeZone={me.timezone} examples={me.examples} />;
}

function App() {
  const { path, search } = useLocation();
  const [me, setMe] = useState<Me | null>(null);
  const [failed, setFailed] = useState(false);
  const online = useOnline();
  const telegram = useMiniApp();
  useEffect(() => {
    if (!online || me || telegram.step !== "ready") return;
    // A failed adoption still shows the app (with the zone the server has).
    setFailed(false);
    api.me().then(
      (me) => adoptBrowserTimeZone(me).then(setMe, () => setMe(me)),
      () => setFailed(true),
    );
  }, [online, me, telegram.step]);
  if (telegram.step === "refused") return <MiniAppRefusal title={telegram.title} message={telegram.message} />;
  // Opened offline (the installed app's shell, web/public/sw.js): nothing is loaded, so nothing stale
  // is shown as if it were live; it loads by itself once the browser is back online.
  if (!online && !me)
    return (
      <div className="centered offline" role="status">
        <p>
          <strong>You're offline.</strong>
        </p>
        <p className="muted">Soma needs a connection to show your conversation and memories. It will load as soon as you're back online.</p>
      </div>
    );
  if (failed)
    return (
      <p className="error centered" role="alert">
        Soma could not be reached. <a href={href(path)}>Try again</a>
      </p>
    );
  if (!me) return <p className="muted centered">Loading…</p>;
  return (
    <div className="shell">
      <header className="topbar">
        <strong className="brand">Soma</strong>
        <nav aria-label="Pages">
          {PAGES.map((page) => (
            <Link
              key={page.path}
              to={page.path}
              className={path === page.path ? "active" : ""}
              aria-current={path === page.path ? "page" : undefined}
            >
              {page.label}
            </Link>
          ))}
        </nav>
        <span className="muted who">{me.displayName}</span>
      </header>
      {online ? null : (
        <p className="offline-banner" role="status">
          You're offline: what's on screen may be out of date, and nothing you send goes out until you're back.
        </p>
      )}
      <main className="content">
        <PageBoundary resetKey={`${path}?${search}`}>
          <Suspense fallback={<p className="muted">Loading…</p>}>
            <Page me={me} />
          </Suspense>
        </PageBoundary>
      </main>
    </div>
  );
}

// Inside Telegram the app is not installed nor offline: Telegram opens it afresh each time.
if (!IN_MINI_APP) registerServiceWorker();

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
