import { bodyLimit } from "hono/body-limit";
import { ApiError } from "./errors";

/** Refuses bodies over `maxBytes` with 413 before a handler reads them (streamed bodies included). */
export function limitBody(maxBytes: number) {
  return bodyLimit({
    maxSize: maxBytes,
    onError: () => {
      throw new ApiError("payload_too_large", `The body is larger than ${maxBytes} bytes.`);
    },
  });
}
