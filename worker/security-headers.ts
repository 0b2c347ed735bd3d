// Soma's security headers: a strict Content-Security-Policy (scripts and styles from Soma only, plus
// Telegram's Login Widget), HSTS, and who may frame a page: no one, except the Mini App's pages, which
// Telegram's web client frames.
import { secureHeaders } from "hono/secure-headers";

/** Telegram's web clients (web.telegram.org/k and /a), which open a Mini App in an iframe. */
export const MINI_APP_FRAME_ANCESTORS = ["https://web.telegram.org"];

/** Soma's security headers, with the pages that may frame the response (`'none'`: no one). */
export function secureHeadersFor(frameAncestors: string[]) {
  const framed = !frameAncestors.includes("'none'");
  return secureHeaders({
    contentSecurityPolicy: {
      defaultSrc: ["'self'"],
      scriptSrc: ["'self'", "https://telegram.org"],
      styleSrc: ["'self'"],
      imgSrc: ["'self'", "data:", "https://t.me", "https://*.telegram.org"],
      connectSrc: ["'self'"],
      frameSrc: ["https://oauth.telegram.org"],
      frameAncestors,
      baseUri: ["'self'"],
      formAction: ["'self'"],
      objectSrc: ["'none'"],
    },
    strictTransportSecurity: "max-age=63072000; includeSubDomains; preload",
    referrerPolicy: "strict-origin-when-cross-origin",
    // X-Frame-Options has no allow-list: framed pages rely on frame-ancestors alone.
    xFrameOptions: framed ? false : "DENY",
  });
}
