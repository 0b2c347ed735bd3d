// The test-file lifecycle of the npm start harness (tests/node/service-process.ts, service-http.ts),
// shared by the files that launch services: a tap in front of the stand-in for the whole file, and after
// each test every service stopped and the test's own clean-up run, with the service logs printed when
// it failed.
import { afterAll, afterEach, beforeAll } from "vitest";
import { stopAll, wrapUp } from "./service-process";
import { startTap, type Tap } from "./service-http";

/** Registers the file's hooks (call it at the top level of a test file); `tap()` is the file's tap once beforeAll ran. */
export function registerServiceHooks(standIn: string, cleanUp: () => Promise<void> = async () => {}): { tap: () => Tap } {
  let tap: Tap | undefined;
  beforeAll(async () => {
    tap = await startTap(standIn);
  });
  afterAll(async () => {
    await tap?.stop();
  });
  afterEach(async (context) => {
    let failure: unknown;
    try {
      await stopAll();
    } catch (error) {
      failure = error;
    }
    await cleanUp();
    const failed = failure !== undefined || context.task.result?.state === "fail";
    const logs = wrapUp(failed);
    if (failed) console.error(`service logs of "${context.task.name}":\n${logs}`);
    if (failure) throw failure;
  });
  return {
    tap: () => {
      if (!tap) throw new Error("the tap starts in beforeAll");
      return tap;
    },
  };
}
