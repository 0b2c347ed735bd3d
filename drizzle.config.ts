import { defineConfig } from "drizzle-kit";

// drizzle-kit only generates migrations from db/schema.ts; ops/db-setup.ts applies them.
export default defineConfig({
  dialect: "postgresql",
  schema: "./db/schema.ts",
  out: "./db/migrations",
  schemaFilter: ["public", "auth", "search"],
});
