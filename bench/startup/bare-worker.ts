// The comparison Worker of bench/startup.ts: bare Hono with one route and nothing else — no middleware,
// no sub-apps, no other imports. GET /login answers with the HTML the benchmark passes in the LOGIN_HTML
// var (the exact page the real app renders), so both Workers send the same bytes; any other path is
// Hono's default 404.
import { Hono } from "hono";

const app = new Hono<{ Bindings: { LOGIN_HTML?: string } }>();
app.get("/login", (c) => c.html(c.env.LOGIN_HTML ?? "<!doctype html><title>Sign in</title>"));

export default app;
