// Soma inside Telegram (issue 29): the memory center opened as a Mini App, in the chat's own colours.
// Loaded only on /tg pages (web/src/main.tsx imports it on demand), with Telegram's bridge bundled
// (@tma.js/bridge: the same postEvent/receiveEvent protocol on every client — TelegramWebviewProxy on
// phones and desktops, postMessage to the parent in the web client's iframe). Nothing is fetched from
// anywhere but Soma.
//
// Sign-in: the launch data Telegram put in the URL's fragment (tgWebAppData, never sent to a server by the
// browser) goes to POST /auth/telegram/mini-app, which checks Telegram's signature and answers a session
// token; every API call then carries it as a bearer header (a cross-site iframe gets no cookies). The
// token is kept in this tab's sessionStorage so a reload inside Telegram does not need fresh launch data;
// the fragment is then taken out of the address bar: a copied link carries no one's launch data. A
// browser that blocks third-party storage (Telegram's web client in a cross-site iframe) denies
// sessionStorage altogether: the token then lives in memory, and the fragment stays for a reload.
// The launch parameters are read here rather than by the bridge's retrieveLaunchParams, which writes
// sessionStorage and so throws in exactly that iframe.
import { on, postEvent } from "@tma.js/bridge";
import { sendBearer } from "./api";
import { CHANGE, historyDepth } from "./router";
import { attachBridge, type TelegramBridge } from "./telegram";

const SESSION_KEY = "soma.miniApp.session";
const LAUNCH_KEY = "soma.miniApp.launch";

/** This tab's sessionStorage, or null where the browser denies it (third-party storage blocked). */
function tabStorage(): Storage | null {
  try {
    return window.sessionStorage;
  } catch {
    return null;
  }
}

/** Telegram's launch parameters: from the URL's fragment, the navigation that opened the page, or kept from before a reload. */
function launchParams(): URLSearchParams | null {
  const fromUrl = (url: string | undefined) => {
    if (!url) return null;
    const params = new URLSearchParams(new URL(url).hash.slice(1));
    return params.has("tgWebAppData") || params.has("tgWebAppPlatform") ? params : null;
  };
  const navigation = performance.getEntriesByType("navigation")[0] as PerformanceNavigationTiming | undefined;
  const found = fromUrl(window.location.href) ?? fromUrl(navigation?.name);
  const storage = tabStorage();
  if (found) {
    storage?.setItem(LAUNCH_KEY, found.toString());
    return found;
  }
  const kept = storage?.getItem(LAUNCH_KEY);
  return kept ? new URLSearchParams(kept) : null;
}

export type MiniAppStart = { ok: true } | { ok: false; title: string; message: string };

/** Telegram's theme parameter for each of Soma's colours (the first one present wins). */
const THEME: Array<[string, ...string[]]> = [
  ["--bg", "secondary_bg_color", "bg_color"],
  ["--panel", "section_bg_color", "bg_color"],
  ["--text", "text_color"],
  ["--muted", "hint_color", "subtitle_text_color"],
  ["--accent", "button_color", "link_color"],
  ["--on-accent", "button_text_color"],
  ["--danger", "destructive_text_color"],
  ["--border", "section_separator_color"],
];

const COLOUR = /^#[0-9a-f]{6}$/i;

/** Soma's colours from Telegram's theme: light or dark, as the person's Telegram is. */
export function applyTheme(params: Record<string, unknown>): void {
  const style = document.documentElement.style;
  const colour = (key: string) => (typeof params[key] === "string" && COLOUR.test(params[key]) ? params[key] : undefined);
  for (const [property, ...keys] of THEME) {
    const value = keys.map(colour).find(Boolean);
    if (value) style.setProperty(property, value);
  }
  const hint = colour("hint_color");
  if (!colour("section_separator_color") && hint) style.setProperty("--border", `color-mix(in srgb, ${hint} 30%, transparent)`);
  const bg = colour("bg_color");
  if (bg) {
    const [r, g, b] = [1, 3, 5].map((i) => Number.parseInt(bg.slice(i, i + 2), 16));
    const light = 0.2126 * r! + 0.7152 * g! + 0.0722 * b! > 140;
    style.colorScheme = light ? "light" : "dark";
    document.documentElement.dataset.theme = light ? "light" : "dark";
    document.querySelector('meta[name="color-scheme"]')?.setAttribute("content", light ? "light" : "dark");
  }
}

/** Telegram's calls, tolerant of a client too old for one (it then just does not happen). */
function bridge(): TelegramBridge {
  return {
    post: (method, params) => {
      try {
        (postEvent as (method: string, params?: Record<string, unknown>) => void)(method, params);
      } catch {
        // Not inside a Telegram client (opened in a plain tab): the page works without Telegram's controls.
      }
    },
    on: (event, listener) => (on as (event: string, listener: (payload: unknown) => void) => () => void)(event, listener),
  };
}

/** Insets Telegram reports (its own bars, a phone's notch) as CSS variables the layout pads by. */
function followInsets(telegram: TelegramBridge): void {
  const style = document.documentElement.style;
  const insets = (prefix: string) => (payload: unknown) => {
    const given = payload as Partial<Record<"top" | "bottom" | "left" | "right", number>>;
    for (const side of ["top", "bottom", "left", "right"] as const) {
      const value = given?.[side];
      if (typeof value === "number" && Number.isFinite(value)) style.setProperty(`--tg-${prefix}-${side}`, `${Math.max(0, value)}px`);
    }
  };
  telegram.on("safe_area_changed", insets("safe"));
  telegram.on("content_safe_area_changed", insets("content"));
  telegram.on("viewport_changed", (payload) => {
    const { height, is_state_stable: stable } = payload as { height?: number; is_state_stable?: boolean };
    if (typeof height === "number" && height > 0) {
      style.setProperty("--tg-viewport-height", `${height}px`);
      if (stable) style.setProperty("--tg-viewport-stable-height", `${height}px`);
    }
  });
  telegram.post("web_app_request_safe_area");
  telegram.post("web_app_request_content_safe_area");
  telegram.post("web_app_request_viewport");
}

/** Telegram's BackButton shows while there is a page of Soma to go back to, and goes back. */
function followHistory(telegram: TelegramBridge): void {
  const update = () => telegram.post("web_app_setup_back_button", { is_visible: historyDepth() > 0 });
  telegram.on("back_button_pressed", () => window.history.back());
  window.addEventListener("popstate", update);
  window.addEventListener(CHANGE, update);
  update();
}

async function exchange(initData: string): Promise<{ token: string } | { error: string }> {
  const response = await fetch("/auth/telegram/mini-app", {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ initData }),
  });
  const body = (await response.json().catch(() => null)) as { token?: string; error?: { message?: string } } | null;
  if (response.ok && body?.token) return { token: body.token };
  return { error: body?.error?.message ?? `Telegram sign-in failed (${response.status}).` };
}

/** The session for this tab: the one kept from before a reload, or one made from Telegram's launch data. */
async function signIn(launch: URLSearchParams, ended: () => void): Promise<MiniAppStart> {
  const kept = tabStorage()?.getItem(SESSION_KEY);
  if (kept) {
    sendBearer(kept, ended);
    return { ok: true };
  }
  const initData = launch.get("tgWebAppData");
  if (!initData)
    return {
      ok: false,
      title: "Soma could not sign you in",
      message: "Telegram gave no launch data. Open Soma from its chat in Telegram.",
    };
  const answer = await exchange(initData);
  if ("error" in answer) return { ok: false, title: "Soma could not sign you in", message: answer.error };
  tabStorage()?.setItem(SESSION_KEY, answer.token);
  sendBearer(answer.token, ended);
  return { ok: true };
}

/**
 * Starts the Mini App: Telegram's theme, insets and buttons, then the session. `ended` runs when the
 * session stops working later (it expired, or the account was deleted): the page says so.
 */
export async function startMiniApp(ended: () => void): Promise<MiniAppStart> {
  const launch = launchParams();
  if (!launch) {
    return {
      ok: false,
      title: "This page opens inside Telegram",
      message: "Open Soma from its chat in Telegram (the Memory button), or use the web app in a browser.",
    };
  }
  const telegram = bridge();
  attachBridge(telegram);
  try {
    applyTheme(JSON.parse(launch.get("tgWebAppThemeParams") ?? "{}") as Record<string, unknown>);
  } catch {
    // A theme that is not JSON: Soma's own colours stay.
  }
  document.documentElement.classList.add("mini-app");
  telegram.on("theme_changed", (payload) => applyTheme((payload as { theme_params?: Record<string, unknown> })?.theme_params ?? {}));
  followInsets(telegram);
  const forgetSession = () => {
    tabStorage()?.removeItem(SESSION_KEY);
    ended();
  };
  const started = await signIn(launch, forgetSession);
  // The launch data is read and the session kept: the address bar keeps none of it.
  if (started.ok && tabStorage() && window.location.hash)
    window.history.replaceState(window.history.state, "", window.location.pathname + window.location.search);
  telegram.post("web_app_set_background_color", { color: getComputedStyle(document.documentElement).getPropertyValue("--bg").trim() });
  telegram.post("web_app_set_header_color", { color_key: "secondary_bg_color" });
  telegram.post("web_app_ready");
  telegram.post("web_app_expand");
  if (started.ok) followHistory(telegram);
  return started;
}

/** Closes the Mini App (Telegram's own close). */
export function closeMiniApp(): void {
  bridge().post("web_app_close");
}
