// Launch data as Telegram's clients hand it to a Mini App (https://core.telegram.org/bots/webapps):
// a query string of fields, `hash` being hex(HMAC-SHA256(data_check_string, HMAC-SHA256("WebAppData", bot token))).
// Written from the documentation alone (not from the code under test), with WebCrypto, for the Worker
// tests and the browser tests alike.

const encoder = new TextEncoder();

async function hmac(key: Uint8Array<ArrayBuffer>, message: string): Promise<Uint8Array<ArrayBuffer>> {
  const imported = await crypto.subtle.importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"]);
  return new Uint8Array(await crypto.subtle.sign("HMAC", imported, encoder.encode(message)));
}

export interface LaunchUser {
  id: number;
  first_name: string;
  last_name?: string;
  username?: string;
  language_code?: string;
}

/** Signed launch data for `user`, as raw initData (what Telegram puts in tgWebAppData). */
export async function signedInitData(
  botToken: string,
  options: { user?: LaunchUser | null; authDate?: number; extra?: Record<string, string> } = {},
): Promise<string> {
  const fields: Record<string, string> = {
    query_id: "AAHdF6IQAAAAAN0XohDhrOrc",
    auth_date: String(options.authDate ?? Math.floor(Date.now() / 1000)),
    // Telegram adds the Ed25519 signature for third parties; the HMAC covers it like any other field.
    signature: "o6cAVnsD5KldvZ8s2ZCuPkq7SmWa0bFpzgnXBIeRmGQzTTQZZ8iZ5WZCz0CMvUkyKzV1D0aJn7U0Zf3oUmw8DQ",
    ...options.extra,
  };
  if (options.user !== null) fields.user = JSON.stringify(options.user ?? { id: 279058397, first_name: "Vladislav", language_code: "en" });
  const dataCheckString = Object.entries(fields)
    .map(([key, value]) => `${key}=${value}`)
    .sort()
    .join("\n");
  const secret = await hmac(new Uint8Array(encoder.encode("WebAppData")), botToken);
  const hash = [...(await hmac(secret, dataCheckString))].map((b) => b.toString(16).padStart(2, "0")).join("");
  return new URLSearchParams({ ...fields, hash }).toString();
}

/** The URL fragment a Telegram client opens a Mini App with: launch data, client version, platform and theme. */
export function launchFragment(initData: string, theme: Record<string, string>, platform = "android"): string {
  return new URLSearchParams({
    tgWebAppData: initData,
    tgWebAppVersion: "8.0",
    tgWebAppPlatform: platform,
    tgWebAppThemeParams: JSON.stringify(theme),
  }).toString();
}

/** Telegram's light and dark themes, as its Android client sends them. */
export const TELEGRAM_THEMES = {
  light: {
    bg_color: "#ffffff",
    text_color: "#000000",
    hint_color: "#999999",
    link_color: "#2481cc",
    button_color: "#2481cc",
    button_text_color: "#ffffff",
    secondary_bg_color: "#efeff3",
    header_bg_color: "#ffffff",
    accent_text_color: "#2481cc",
    section_bg_color: "#ffffff",
    section_header_text_color: "#6d6d72",
    subtitle_text_color: "#999999",
    destructive_text_color: "#ff3b30",
  },
  dark: {
    bg_color: "#212121",
    text_color: "#ffffff",
    hint_color: "#aaaaaa",
    link_color: "#8774e1",
    button_color: "#8774e1",
    button_text_color: "#ffffff",
    secondary_bg_color: "#181818",
    header_bg_color: "#212121",
    accent_text_color: "#8774e1",
    section_bg_color: "#212121",
    section_header_text_color: "#8774e1",
    subtitle_text_color: "#aaaaaa",
    destructive_text_color: "#ff595a",
  },
} as const;
