// The Worker entry: the Hono app for HTTP and the Durable Object classes it binds.
import { createApp } from "./app";

export { UserAgent } from "../agents/user-agent";
export { DeadLetters } from "../agents/dead-letters";

export default createApp() satisfies ExportedHandler<Env>;
