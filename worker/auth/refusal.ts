// Refusals on the sign-in flows. These are browser navigations (a widget redirect, a form, Google's
// redirect back), where a JSON body is a dead end: a browser gets a page saying what happened and the
// way back to /login, with the same status; any other client gets the usual JSON error.
import type { Context } from "hono";
import { html } from "hono/html";
import { ApiError, ERROR_STATUS, type ErrorCode } from "../errors";
import { page } from "../pages/layout";
import type { AppEnv } from "../types";

/** Answers a refused sign-in step: an HTML page for a browser, otherwise rejects with the ApiError. */
export async function refuseSignIn(
  c: Context<AppEnv>,
  code: ErrorCode,
  message: string,
  back: { href: string; label: string } = { href: "/login", label: "Back to sign in" },
): Promise<Response> {
  if (!c.req.header("accept")?.includes("text/html")) throw new ApiError(code, message);
  return c.html(
    page(
      "Sign in · Soma",
      html`<main class="card">
        <h1>Soma</h1>
        <p class="lead" role="alert">${message}</p>
        <p><a class="button" href="${back.href}">${back.label}</a></p>
      </main>`,
    ),
    ERROR_STATUS[code],
  );
}
