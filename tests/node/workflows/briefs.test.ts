import { describe, expect, it } from "vitest";
import { newPerson, runOnce, testWorkflows } from "./harness";

describe("probe", () => {
  it("cron", async () => {
    const berlin = await newPerson({ telegram: true, timezone: "Europe/Berlin" });
    const mars = await newPerson({ telegram: true, timezone: "Mars/Olympus" });
    const { functions } = testWorkflows({ now: new Date("2026-11-21T07:00:00Z") });
    const out = await runOnce(functions.morningBriefCron, undefined);
    console.log(out.result, out.error, out.state);
    console.log(JSON.stringify((out.ctx.step.sendEvent as any).mock?.calls ?? (out.ctx.step.sendEvent as any).calls));
  }, 15000);
});
