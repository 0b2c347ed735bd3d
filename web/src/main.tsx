import { StrictMode, useEffect, useState } from "react";
import { createRoot } from "react-dom/client";
import { api, type Me } from "./api";
import { ChatPage } from "./chat";
import { MemoriesPage } from "./memories";
import { adoptBrowserTimeZone, SettingsPage } from "./settings";

const PAGES = [
  { path: "/app", label: "Chat" },
  { path: "/app/memories", label: "Memories" },
  { path: "/app/settings", label: "Settings" },
] as const;

function usePath(): [string, (path: string) => void] {
  const [path, setPath] = useState(window.location.pathname.replace(/\/$/, "") || "/app");
  useEffect(() => {
    const onPop = () => setPath(window.location.pathname.replace(/\/$/, ""));
    window.addEventListener("popstate", onPop);
    return () => window.removeEventListener("popstate", onPop);
  }, []);
  const navigate = (next: string) => {
    window.history.pushState(null, "", next);
    setPath(next);
  };
  return [path, navigate];
}

function App() {
  const [path, navigate] = usePath();
  const [me, setMe] = useState<Me | null>(null);
  useEffect(() => {
    // A failed adoption still shows the app (with the zone the server has).
    api.me().then((me) => adoptBrowserTimeZone(me).then(setMe, () => setMe(me)), () => {});
  }, []);
  if (!me) return <p className="muted centered">Loading…</p>;
  return (
    <div className="shell">
      <header className="topbar">
        <strong className="brand">Soma</strong>
        <nav>
          {PAGES.map((page) => (
            <a
              key={page.path}
              href={page.path}
              className={path === page.path ? "active" : ""}
              onClick={(event) => {
                event.preventDefault();
                navigate(page.path);
              }}
            >
              {page.label}
            </a>
          ))}
        </nav>
        <span className="muted">{me.displayName}</span>
      </header>
      <main className="content">
        {path === "/app/memories" ? <MemoriesPage /> : path === "/app/settings" ? <SettingsPage me={me} /> : <ChatPage />}
      </main>
    </div>
  );
}

createRoot(document.getElementById("root")!).render(
  <StrictMode>
    <App />
  </StrictMode>,
);
