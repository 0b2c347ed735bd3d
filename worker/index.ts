// The Worker entry: the Hono app for HTTP and the Durable Object classes it binds.
import { createApp } from "./app";

export { UserAgent } from "../agents/user-agent";

export default createApp() satisfies ExportedHandler<Env>;
