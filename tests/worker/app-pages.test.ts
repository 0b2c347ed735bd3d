// Guards which /app paths the Worker serves the web app on: each page, reloaded or shared, loads with a
// session and sends a signed-out visitor to /login.
import { describe, expect, it } from "vitest";
import { call, newPerson, sessionCookie } from "./helpers";

const PAGES = ["/app", "/app/memories", "/app/facts", "/app/reminders", "/app/settings"];

describe("the web app's pages", () => {
  it("are served with a session", async () => {
    const cookie = await sessionCookie(await newPerson("Pages"));
    for (const path of PAGES) {
      const page = await call(path, { headers: { cookie } });
      expect(page.status, path).toBe(200);
      expect(page.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(await page.text()).toContain('<div id="root"></div>');
    }
  });

  it("send a signed-out visitor to /login", async () => {
    for (const path of PAGES) {
      const page = await call(path, { redirect: "manual" });
      expect(page.status, path).toBe(307);
      expect(page.headers.get("location")).toBe("/login");
    }
  });

  it("are not served for paths the app does not have", async () => {
    const cookie = await sessionCookie(await newPerson("Pages"));
    expect((await call("/app/nowhere", { headers: { cookie } })).status).toBe(404);
  });
});
