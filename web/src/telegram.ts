// Telegram's own controls, as the pages use them inside the Mini App: the MainButton for a page's main
// action, haptic feedback on a destructive confirm, a closing confirmation while an edit is unsaved.
// Outside Telegram every call here does nothing. The bridge to Telegram (@tma.js/bridge) is attached by
// web/src/mini-app.ts, a chunk only the Mini App loads: the web app's own bundle does not grow.
import { type RefObject, useEffect, useRef } from "react";

/** The part of Telegram's bridge the pages need: Mini App methods out, events in. */
export interface TelegramBridge {
  post(method: string, params?: Record<string, unknown>): void;
  /** Listens to `event`; returns the function that stops listening. */
  on(event: string, listener: (payload: unknown) => void): () => void;
}

let bridge: TelegramBridge | null = null;

/** Called once by the Mini App when Telegram's bridge is up. */
export function attachBridge(connected: TelegramBridge): void {
  bridge = connected;
}

/** A short vibration on the phone before something that cannot be undone (nothing outside Telegram). */
export function warnByTouch(): void {
  bridge?.post("web_app_trigger_haptic_feedback", { type: "notification", notification_type: "warning" });
}

/** While `unsaved`, closing the Mini App asks first (Telegram's closing confirmation). */
function useClosingConfirmation(unsaved: boolean): void {
  useEffect(() => {
    if (!bridge || !unsaved) return;
    const connected = bridge;
    connected.post("web_app_setup_closing_behavior", { need_confirmation: true });
    return () => connected.post("web_app_setup_closing_behavior", { need_confirmation: false });
  }, [unsaved]);
}

/**
 * Shows Telegram's MainButton with `text` while the page is on screen: pressing it runs `onPress`.
 * `active` false greys it out, `busy` shows its progress. Without Telegram nothing is shown.
 */
function useMainButton(button: { text: string; onPress: () => void; active: boolean; busy?: boolean }): void {
  const press = useRef(button.onPress);
  press.current = button.onPress;
  const { text, active, busy = false } = button;
  useEffect(() => {
    if (!bridge) return;
    const connected = bridge;
    const stop = connected.on("main_button_pressed", () => press.current());
    return () => {
      stop();
      connected.post("web_app_setup_main_button", { is_visible: false });
    };
  }, []);
  useEffect(() => {
    const style = getComputedStyle(document.documentElement);
    bridge?.post("web_app_setup_main_button", {
      is_visible: true,
      is_active: active && !busy,
      is_progress_visible: busy,
      text,
      color: style.getPropertyValue("--accent").trim(),
      text_color: style.getPropertyValue("--on-accent").trim(),
    });
  }, [text, active, busy]);
}

/** An edit form inside Telegram: the MainButton submits it, and closing asks first while it is `unsaved`. */
export function useTelegramForm(
  form: RefObject<HTMLFormElement | null>,
  state: { label: string; unsaved: boolean; saving: boolean },
): void {
  useClosingConfirmation(state.unsaved);
  useMainButton({ text: state.label, onPress: () => form.current?.requestSubmit(), active: state.unsaved, busy: state.saving });
}
