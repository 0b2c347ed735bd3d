// The person's timezone as the browser knows it, adopted once on a first sign-in. Kept apart from the
// Settings page so the shell can call it without loading that page's code (the chat loads alone).
import { api, type Me } from "./api";

/** The browser's own zone (what the select offers first). */
export function browserTimeZone(): string {
  return Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC";
}

/** Set once a zone was adopted or chosen in this browser, so choosing UTC in Settings later sticks. */
export const TIMEZONE_ADOPTED_KEY = "soma.timezone-adopted";

/**
 * On a first sign-in the person's zone is still the default UTC: take the browser's instead, once per
 * browser. Returns the person as it now is.
 */
export async function adoptBrowserTimeZone(me: Me): Promise<Me> {
  const zone = browserTimeZone();
  if (me.timezone !== "UTC" || zone === "UTC" || localStorage.getItem(TIMEZONE_ADOPTED_KEY)) return me;
  localStorage.setItem(TIMEZONE_ADOPTED_KEY, "1");
  const { timezone } = await api.setTimezone(zone);
  return { ...me, timezone };
}
