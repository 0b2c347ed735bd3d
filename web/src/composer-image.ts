// An image a person attaches in the web chat, made ready to travel in a chat frame: the agent takes one
// JPEG, PNG, WebP or GIF of at most 5 MB (agents/channels.ts). A large picture (a phone's photo is often
// 4000 px and several MB) is drawn smaller on a canvas first, so the socket frame stays small and the
// model gets no more pixels than it uses.
import type { FileUIPart } from "ai";

/** The agent's limit (MAX_IMAGE_BYTES in agents/telegram-message.ts). */
const MAX_IMAGE_BYTES = 5 * 1024 * 1024;
/** The longest side an image is sent with. */
const MAX_SIDE = 1600;
/** Above this an image is re-encoded even when small enough in pixels: a frame is not a file upload. */
const KEEP_BYTES = 1024 * 1024;
export const IMAGE_TYPES = ["image/jpeg", "image/png", "image/webp", "image/gif"];

const NOT_AN_IMAGE = "That file isn't an image I can take: send a JPEG, PNG, WebP or GIF.";
const UNREADABLE = "That image could not be opened.";
const TOO_LARGE = "That image is too large to send, even made smaller.";

/** The file part to send for `file`, or why it cannot be sent. */
export async function prepareImage(file: File): Promise<FileUIPart | { error: string }> {
  if (!IMAGE_TYPES.includes(file.type)) return { error: NOT_AN_IMAGE };
  let bitmap: ImageBitmap;
  try {
    bitmap = await createImageBitmap(file);
  } catch {
    return { error: UNREADABLE };
  }
  try {
    const scale = Math.min(1, MAX_SIDE / Math.max(bitmap.width, bitmap.height));
    const blob = scale === 1 && file.size <= KEEP_BYTES ? file : await redraw(bitmap, scale);
    if (!blob) return { error: UNREADABLE };
    if (blob.size > MAX_IMAGE_BYTES) return { error: TOO_LARGE };
    return { type: "file", mediaType: blob.type, filename: file.name, url: await dataUrl(blob) };
  } finally {
    bitmap.close();
  }
}

/** `bitmap` at `scale`, as a JPEG (a photo's format; a GIF keeps only its first frame). */
function redraw(bitmap: ImageBitmap, scale: number): Promise<Blob | null> {
  const canvas = document.createElement("canvas");
  canvas.width = Math.max(1, Math.round(bitmap.width * scale));
  canvas.height = Math.max(1, Math.round(bitmap.height * scale));
  const context = canvas.getContext("2d");
  if (!context) return Promise.resolve(null);
  // JPEG has no transparency: a transparent PNG's background becomes white, not black.
  context.fillStyle = "#fff";
  context.fillRect(0, 0, canvas.width, canvas.height);
  context.drawImage(bitmap, 0, 0, canvas.width, canvas.height);
  return new Promise((resolve) => canvas.toBlob(resolve, "image/jpeg", 0.85));
}

function dataUrl(blob: Blob): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => resolve(String(reader.result));
    reader.onerror = () => reject(reader.error);
    reader.readAsDataURL(blob);
  });
}

/** The first image among pasted or dropped files, if any. */
export function imageIn(files: FileList | null | undefined): File | undefined {
  return files ? Array.from(files).find((f) => f.type.startsWith("image/")) : undefined;
}
