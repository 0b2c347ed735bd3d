import { html } from "hono/html";
import type { HtmlEscapedString } from "hono/utils/html";

/** The HTML shell of the server-rendered pages (the sign-in page; the app itself is in web/). */
export function page(title: string, body: HtmlEscapedString | Promise<HtmlEscapedString>) {
  return html`<!doctype html>
<html lang="en" data-theme="dark">
  <head>
    <meta charset="utf-8" />
    <meta name="viewport" content="width=device-width, initial-scale=1" />
    <meta name="color-scheme" content="dark" />
    <title>${title}</title>
    <link rel="icon" href="/favicon.svg" type="image/svg+xml" />
    <link rel="stylesheet" href="/styles.css" />
  </head>
  <body>
    ${body}
  </body>
</html>`;
}
