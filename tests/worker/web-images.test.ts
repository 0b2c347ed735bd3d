// Issue 20: an image from the web chat passes the socket's door only as one JPEG, PNG, WebP or GIF data
// URL of at most 5 MB with the message; a model that cannot see images gets the words alone (or the
// person an honest notice), and each image spends the media budget as a Telegram photo does.
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { getAgentByName } from "agents";
import type { UIMessage } from "ai";
import { describe, expect, it } from "vitest";
import { BAD_IMAGE, chatRequest, ONE_IMAGE, RATE_NOTICE, screenFrame, webTurnMessage } from "../../agents/channels";
import { MAX_IMAGE_BYTES, NO_VISION } from "../../agents/telegram-message";
import type { UserAgent } from "../../agents/user-agent";
import { openSocket } from "./chat-socket";
import { newPerson, sessionCookie } from "./helpers";

/** A data URL of `bytes` bytes said to be `mediaType`. */
function dataUrl(mediaType: string, bytes: number): string {
  return `data:${mediaType};base64,${btoa("x".repeat(bytes))}`;
}

const image = (mediaType = "image/png", url = dataUrl(mediaType, 300)) => ({ type: "file", mediaType, url, filename: "a.png" });

/** A user message as the AI SDK's useChat sends one with files: the files first, then the words. */
function sent(parts: unknown[], id: string = crypto.randomUUID()) {
  return { id, role: "user", parts };
}

const verdictOf = (parts: unknown[]) => screenFrame(chatRequest("r1", [sent(parts)]), () => false);

async function stored(userId: string): Promise<UIMessage[]> {
  const agent = await getAgentByName(env.UserAgent, userId);
  return runInDurableObject(agent, (instance: UserAgent) => instance.messages);
}

describe("the socket's door takes one image with a message", () => {
  it("accepts one JPEG, PNG, WebP or GIF data URL of at most 5 MB, with or without words", () => {
    for (const type of ["image/jpeg", "image/png", "image/webp", "image/gif"]) {
      const verdict = verdictOf([image(type), { type: "text", text: "my new bike" }]);
      expect(verdict).toMatchObject({ kind: "turn", text: "my new bike", image: { mediaType: type } });
    }
    expect(verdictOf([image()])).toMatchObject({ kind: "turn", text: "", image: { mediaType: "image/png" } });
    expect(verdictOf([image("image/jpeg", dataUrl("image/jpeg", MAX_IMAGE_BYTES))])).toMatchObject({ kind: "turn" });
  });

  it("refuses two images, another type, a type that is not what it says, a remote URL and more than 5 MB", () => {
    expect(verdictOf([image(), image(), { type: "text", text: "two" }])).toMatchObject({ kind: "refuse", notice: ONE_IMAGE });
    const refused = [
      image("image/svg+xml"),
      image("application/pdf"),
      image("image/png", dataUrl("image/jpeg", 300)),
      image("image/png", "https://example.com/cat.png"),
      image("image/png", "data:image/png;base64,not base64!"),
      image("image/png", "data:image/png;base64,"),
      image("image/jpeg", dataUrl("image/jpeg", MAX_IMAGE_BYTES + 3)),
      { type: "file" },
    ];
    for (const file of refused)
      expect(verdictOf([file, { type: "text", text: "look" }])).toMatchObject({ kind: "refuse", notice: BAD_IMAGE });
  });

  it("gives a model that sees images the image before the words, marked as a photo", () => {
    const message = webTurnMessage({ messageId: "m1", text: "", image: { mediaType: "image/png", url: dataUrl("image/png", 3) } }, true);
    expect(message).toMatchObject({
      parts: [
        { type: "file", mediaType: "image/png" },
        { type: "text", text: "(a photo)" },
      ],
      metadata: { photo: true, source: { kind: "web", externalId: "m1" } },
    });
  });
});

describe("an image from the web chat with the offline model, which sees no images", () => {
  it("answers a photo without words with the honest notice, and a photo with words from the words alone", async () => {
    const person = await newPerson("web-photo");
    const client = await openSocket(await sessionCookie(person));
    const alone = client.send([sent([image()])]);
    expect(await client.end(alone)).toMatchObject({ error: true, body: NO_VISION });
    expect(await stored(person.id)).toEqual([]);

    const captioned = client.send([sent([image(), { type: "text", text: "I just finished reading Dune" }], "photo-1")]);
    expect(await client.end(captioned)).not.toMatchObject({ error: true });
    expect(client.text(captioned)).toContain("Dune");
    client.socket.close();
    const [mine] = await stored(person.id);
    expect(mine).toMatchObject({ id: "photo-1", parts: [{ type: "text", text: "I just finished reading Dune" }] });
    expect(mine!.metadata).toMatchObject({ photo: true, captionOnly: true });
    expect(JSON.stringify(await stored(person.id))).not.toContain("data:image");
  });

  it("takes an image near the 5 MB limit through the socket", async () => {
    const person = await newPerson("web-photo-large");
    const client = await openSocket(await sessionCookie(person));
    const id = client.send([
      sent([image("image/jpeg", dataUrl("image/jpeg", MAX_IMAGE_BYTES - 3)), { type: "text", text: "I visited Oslo" }]),
    ]);
    expect(await client.end(id)).not.toMatchObject({ error: true });
    client.socket.close();
    expect((await stored(person.id))[0]!.metadata).toMatchObject({ photo: true });
  });

  it("spends the media budget: the seventh image in a minute gets the rate notice, words alone still go through", async () => {
    const person = await newPerson("web-photo-budget");
    const client = await openSocket(await sessionCookie(person));
    for (let i = 0; i < 6; i++) {
      const id = client.send([sent([image(), { type: "text", text: `photo ${i}` }])]);
      expect(await client.end(id)).not.toMatchObject({ error: true });
    }
    const seventh = client.send([sent([image(), { type: "text", text: "photo 6" }])]);
    expect(await client.end(seventh)).toMatchObject({ error: true, body: RATE_NOTICE });
    const words = client.send([sent([{ type: "text", text: "just words" }])]);
    expect(await client.end(words)).not.toMatchObject({ error: true });
    client.socket.close();
    expect((await stored(person.id)).filter((m) => m.role === "user")).toHaveLength(7);
  });
});
