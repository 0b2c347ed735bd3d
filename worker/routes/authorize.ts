// The OAuth consent page of the MCP server (worker/mcp/oauth.ts), Soma's own part of the authorization
// code flow:
//   GET  /authorize  signed out, the person signs in first and comes back here (worker/auth/return-to.ts),
//                    before anything of the request is read; signed in, the provider validates the
//                    request (client, exact registered redirect URI, PKCE S256, resource), and the page names the app as it registered
//                    itself, where access goes, and what it asks for, with Allow and Deny
//   POST /authorize  the decision. The form carries only the provider's handle, which works once, for
//                    ten minutes, in the browser that opened the page (a cookie of its own), and the
//                    request must come from this origin: a forged form cannot grant anything. Allow
//                    stores the grant (read always, write only if ticked) and goes back to the app
//                    with a code; Deny goes back with access_denied.
// A request that fails before its client and redirect URI are validated is answered here, never
// redirected. Going back to the app is a page that forwards at once rather than a 302: the page's CSP
// (form-action 'self') would stop a form's redirect to another origin.
import { AuthorizationError, CimdFetchError, type ConsentDescription } from "@cloudflare/workers-oauth-provider";
import { Hono, type Context } from "hono";
import { html } from "hono/html";
import { requireSameOrigin } from "../auth/origin";
import { returnAfterSignIn } from "../auth/return-to";
import { sessionPerson } from "../auth/session";
import { limitBody } from "../body-limit";
import { oauthApi, READ_SCOPE, WRITE_SCOPE, type GrantProps } from "../mcp/oauth";
import { markClientConnected } from "../mcp/upkeep";
import { page } from "../pages/layout";
import type { AppEnv } from "../types";

function consentPage(details: ConsentDescription, handle: string, personName: string) {
  const wantsWrite = details.scope.includes(WRITE_SCOPE);
  const kept = details.scope.filter((s) => s !== READ_SCOPE && s !== WRITE_SCOPE);
  return page(
    `Connect ${details.clientName} · Soma`,
    html`<main class="card consent">
      <h1>Connect <span class="app-name">${details.clientName}</span> to your memory?</h1>
      <p class="lead">Signed in as ${personName || "you"}.</p>
      <p>
        ${details.clientDomain ? html`Published by <strong>${details.clientDomain}</strong>.` : "This app registered itself: its name is not verified."}
        Access will be sent to <strong class="redirect-host">${details.redirectHost}</strong>.
      </p>
      ${
        details.redirectIsLoopback
          ? html`<p class="consent-warning">This sends access to an app on your computer. Continue only if you just started connecting it yourself.</p>`
          : ""
      }
      <form method="post" action="/authorize">
        <input type="hidden" name="handle" value="${handle}" />
        ${kept.map((scope) => html`<input type="hidden" name="scope" value="${scope}" />`)}
        <fieldset>
          <legend>It may</legend>
          <label class="consent-scope"><input type="checkbox" name="scope" value="${READ_SCOPE}" checked disabled /> Read your memories and what Soma knows about you</label>
          <input type="hidden" name="scope" value="${READ_SCOPE}" />
          <label class="consent-scope"><input type="checkbox" name="scope" value="${WRITE_SCOPE}" ${wantsWrite ? "checked" : ""} /> Add and correct memories, and forget them</label>
        </fieldset>
        <p class="actions">
          <button type="submit" name="decision" value="approve">Allow</button>
          <button type="submit" name="decision" value="deny" class="secondary">Deny</button>
        </p>
      </form>
    </main>`,
  );
}

async function refusalPage(c: Context<AppEnv>, message: string, status: 400 | 401): Promise<Response> {
  return c.html(
    page(
      "Cannot connect · Soma",
      html`<main class="card"><h1>This app cannot connect</h1><p>${message}</p><p><a href="/app">Back to Soma</a></p></main>`,
    ),
    status,
  );
}

/** Back to the app: a page that forwards at once (see the file's comment), with the provider's headers. */
async function backToApp(c: Context<AppEnv>, location: string, headers: Headers): Promise<Response> {
  const response = await c.html(
    page(
      "Back to the app · Soma",
      html`<meta http-equiv="refresh" content="0;url=${location}" />
        <main class="card"><p>Taking you back to the app… <a href="${location}" id="continue">Continue</a></p></main>`,
    ),
  );
  for (const [name, value] of headers) if (name.toLowerCase() === "set-cookie") response.headers.append(name, value);
  response.headers.set("Cache-Control", "no-store");
  return response;
}

/** A failure the provider reports: redirected to the app when it is safe to, else shown here. */
function authorizationFailure(c: Context<AppEnv>, error: unknown): Response | Promise<Response> {
  if (error instanceof AuthorizationError && error.redirectTo) return c.redirect(error.redirectTo, 302);
  if (error instanceof AuthorizationError) return refusalPage(c, error.description, 400);
  if (error instanceof CimdFetchError) return refusalPage(c, "This app could not be verified.", 400);
  throw error;
}

export const authorize = new Hono<AppEnv>()
  .get("/", async (c) => {
    // The session first (issue 25): a request is parsed, its client looked up and a client ID metadata
    // document fetched only for a person signed in here, never for anyone who sends a link.
    const person = await sessionPerson(c);
    if (!person) {
      const url = new URL(c.req.url);
      returnAfterSignIn(c, `${url.pathname}${url.search}`);
      return c.redirect("/login", 302);
    }
    const oauth = oauthApi(c.env, c.req.raw);
    try {
      const request = await oauth.parseAuthRequest(c.req.raw);
      const details = await oauth.describeConsent(request);
      const consent = await oauth.beginConsent(request);
      const response = await c.html(consentPage(details, consent.handle, person.displayName));
      for (const [name, value] of consent.headers) if (name.toLowerCase() === "set-cookie") response.headers.append(name, value);
      response.headers.set("Cache-Control", "no-store");
      return response;
    } catch (error) {
      return authorizationFailure(c, error);
    }
  })
  .post("/", requireSameOrigin, limitBody(8 * 1024), async (c) => {
    const person = await sessionPerson(c);
    if (!person) return refusalPage(c, "Sign in to Soma first, then connect the app again.", 401);
    const form = await c.req.formData();
    const handle = form.get("handle");
    if (typeof handle !== "string" || handle.length === 0 || handle.length > 512)
      return refusalPage(c, "This page is incomplete. Start connecting again from the app.", 400);
    const oauth = oauthApi(c.env, c.req.raw);
    try {
      if (form.get("decision") !== "approve") {
        const denied = await oauth.denyConsent(c.req.raw, handle);
        return backToApp(c, denied.redirectTo, denied.headers);
      }
      const scope = [...new Set(form.getAll("scope").map(String))];
      if (!scope.includes(READ_SCOPE)) scope.unshift(READ_SCOPE);
      const approved = await oauth.approveConsent(c.req.raw, handle, { scope });
      const { clientName } = await oauth.describeConsent(approved.request);
      const props: GrantProps = { userId: person.id, appName: clientName.slice(0, 100) };
      const { redirectTo } = await oauth.completeAuthorization({
        request: approved.request,
        userId: person.id,
        metadata: { appName: props.appName },
        scope: approved.request.scope,
        props,
      });
      await markClientConnected(c.env, approved.request.clientId);
      return backToApp(c, redirectTo, approved.headers);
    } catch (error) {
      if (error instanceof AuthorizationError) return refusalPage(c, `${error.description} Start connecting again from the app.`, 400);
      throw error;
    }
  });
