// The layering the README promises, checked on every `npm run lint`. Imports point one way:
//   web/ ⇢ (types only) worker/ → agents/ → db/ → platform/
// platform/ is the leaf every layer may use; ops/, bench/ and tests/ sit outside and may use any layer.
// Each rule's name and comment are what a developer reads when it fires.
/** @type {import('dependency-cruiser').IConfiguration} */
module.exports = {
  forbidden: [
    {
      name: "platform-is-the-leaf",
      comment: "platform/ (config, log, faults, deadline, local time, telemetry) is imported by every layer, so it imports none of them.",
      severity: "error",
      from: { path: "^platform/" },
      to: { path: "^(worker|agents|db|web|ops|bench|tests)/" },
    },
    {
      name: "db-imports-only-platform",
      comment: "db/ is below agents/ and worker/: a repository never reaches up into the agent or the HTTP layer.",
      severity: "error",
      from: { path: "^db/" },
      to: { path: "^(worker|agents|web|ops|bench|tests)/" },
    },
    {
      name: "agents-never-import-worker",
      comment: "agents/ is below worker/: the agent and the workflows never depend on HTTP routes or middleware.",
      severity: "error",
      from: { path: "^agents/" },
      to: { path: "^(worker|web|ops|bench|tests)/" },
    },
    {
      name: "worker-never-imports-tools",
      comment: "worker/ is the deployed Worker: it never imports Node-side operations, benchmarks or tests.",
      severity: "error",
      from: { path: "^worker/" },
      to: { path: "^(web|ops|bench|tests)/" },
    },
    {
      name: "web-takes-only-types-from-the-server",
      comment: "web/ is a browser bundle: from worker/, agents/, db/ and platform/ it may import types only (import type …), never code.",
      severity: "error",
      from: { path: "^web/" },
      // platform/conversation-imports.ts is the one exception: pure parsing (no I/O, no server code), run
      // by the browser on an export too large to send and by the server to check what arrives.
      to: {
        path: "^(worker|agents|db|platform)/",
        pathNot: "^platform/(conversation-imports|clean-text)\\.ts$",
        dependencyTypesNot: ["type-only"],
      },
    },
    {
      name: "no-circular",
      comment:
        "An import cycle (type-only imports count too): two modules that need each other belong together, or what they share belongs in a third.",
      severity: "error",
      from: {},
      to: { circular: true },
    },
    {
      name: "no-unresolvable",
      comment: "An import that resolves to nothing.",
      severity: "error",
      from: {},
      to: { couldNotResolve: true, pathNot: "^cloudflare:" },
    },
  ],
  options: {
    doNotFollow: { path: "node_modules" },
    exclude: { path: "(^|/)(node_modules|web/dist|docs/site)/" },
    tsPreCompilationDeps: true,
    tsConfig: { fileName: "tsconfig.node.json" },
    enhancedResolveOptions: {
      exportsFields: ["exports"],
      conditionNames: ["import", "require", "node", "default", "types"],
      extensions: [".ts", ".tsx", ".mts", ".js", ".mjs", ".cjs", ".json", ".d.ts"],
    },
    reporterOptions: { text: { highlightFocused: true } },
  },
};
