// Issue 20: what a Telegram message holds besides text is read once, at the webhook: voice notes and
// audio to transcribe, the best photo under the cap, who a forward came from, and the kinds that get a
// word of their own instead of a model turn.
import { describe, expect, it } from "vitest";
import { MAX_IMAGE_BYTES, otherKindReply, OTHER_KINDS, readTelegramMessage, recordingMaxBytes } from "../../agents/telegram-message";

describe("readTelegramMessage", () => {
  it("keeps a voice note's file id, length and type (no text of its own)", () => {
    expect(readTelegramMessage({ voice: { file_id: "v1", duration: 12.4, mime_type: "audio/ogg", file_size: 9000 } })).toEqual({
      text: "",
      extras: {
        attachment: {
          kind: "voice",
          fileId: "v1",
          durationSeconds: 12,
          mediaType: "audio/ogg",
          fileName: "voice.ogg",
          bytes: 9000,
          recording: "voice",
        },
      },
    });
  });

  it("treats audio files and round video notes as speech too", () => {
    const audio = readTelegramMessage({ audio: { file_id: "a1", duration: 60, mime_type: "audio/mpeg" }, caption: "my talk" });
    expect(audio).toMatchObject({
      text: "my talk",
      extras: { attachment: { kind: "voice", fileName: "audio.mp3", mediaType: "audio/mpeg", recording: "audio" } },
    });
    const note = readTelegramMessage({ video_note: { file_id: "n1", duration: 30 } });
    expect(note.extras.attachment).toMatchObject({ kind: "voice", mediaType: "video/mp4", durationSeconds: 30, recording: "video_note" });
  });

  it("holds a recording's bytes to what VOICE_MAX_SECONDS allows at its kind's highest bitrate (issue 25)", () => {
    const MB = 1024 * 1024;
    // Ten minutes of Opus voice at 64 kbit/s and a quarter again: 6 MB, nowhere near 20 MB.
    expect(recordingMaxBytes("voice", 600)).toBe(600 * 10_000 + 64 * 1024);
    expect(recordingMaxBytes("voice", 600)).toBeLessThan(7 * MB);
    // A ten-minute MP3 at 320 kbit/s fits (Telegram's own 20 MB is the tighter bound), as does a minute's round video.
    expect(recordingMaxBytes("audio", 600)).toBeGreaterThan(600 * 40_000);
    expect(recordingMaxBytes("video_note", 60)).toBeGreaterThan((60 * 1_600_000) / 8);
  });

  it("picks the largest photo size under the cap, with the caption as text", () => {
    const photo = [
      { file_id: "small", width: 90, height: 90, file_size: 1_000 },
      { file_id: "large", width: 1280, height: 1280, file_size: 200_000 },
      { file_id: "huge", width: 5000, height: 5000, file_size: MAX_IMAGE_BYTES + 1 },
    ];
    expect(readTelegramMessage({ photo, caption: "my new bike" })).toEqual({
      text: "my new bike",
      extras: { attachment: { kind: "image", fileId: "large", mediaType: "image/jpeg", bytes: 200_000 } },
    });
  });

  it("looks at an image sent as a file, but not at other documents", () => {
    expect(readTelegramMessage({ document: { file_id: "d1", mime_type: "image/png" } }).extras.attachment).toMatchObject({
      kind: "image",
      mediaType: "image/png",
    });
    expect(readTelegramMessage({ document: { file_id: "d2", mime_type: "application/pdf" } }).extras).toEqual({ other: "document" });
  });

  it("says who a forwarded message came from", () => {
    const from = (forward_origin: Parameters<typeof readTelegramMessage>[0]["forward_origin"]) =>
      readTelegramMessage({ text: "I finished Dune", forward_origin }).extras.forwardedFrom;
    expect(from({ type: "user", sender_user: { first_name: "Bob", last_name: "Stone" } })).toBe("Bob Stone");
    expect(from({ type: "hidden_user", sender_user_name: "Alice" })).toBe("Alice");
    expect(from({ type: "channel", chat: { title: "Book Club" } })).toBe("Book Club");
    expect(from(undefined)).toBeUndefined();
  });

  it("names the kinds it does not read, each with one short reply", () => {
    expect(readTelegramMessage({ sticker: {} }).extras).toEqual({ other: "sticker" });
    expect(readTelegramMessage({ location: { latitude: 1, longitude: 2 } }).extras).toEqual({ other: "location" });
    expect(readTelegramMessage({ poll: {} }).extras).toEqual({ other: "poll" });
    expect(readTelegramMessage({}).extras).toEqual({ other: "other" });
    for (const kind of OTHER_KINDS) expect(otherKindReply(kind).length).toBeLessThan(140);
    expect(otherKindReply("location")).toContain("/timezone");
  });
});
