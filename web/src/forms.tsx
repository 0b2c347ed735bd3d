// What the pages' forms and confirmations share: an error said out loud (role=alert), the save/cancel
// row of a form, a confirmation that asks before something that cannot be undone, and a form's saving
// state.
import { useState, type ReactNode } from "react";
import { warnByTouch } from "./telegram";

/** A failure, announced to screen readers; nothing while there is none. */
export function ErrorNote({ message }: { message: string | null }) {
  return message ? (
    <p className="error" role="alert">
      {message}
    </p>
  ) : null;
}

/** A form's submit and cancel buttons, both disabled while it saves. */
export function FormActions({ saving, saveLabel, onCancel }: { saving: boolean; saveLabel: string; onCancel: () => void }) {
  return (
    <div className="actions">
      <button type="submit" disabled={saving}>
        {saving ? "Saving…" : saveLabel}
      </button>
      <button type="button" className="secondary" onClick={onCancel} disabled={saving}>
        Cancel
      </button>
    </div>
  );
}

/** Asks before an action that cannot be undone: `children` says what will happen (inside Telegram, the phone buzzes on confirm). */
export function Confirm(props: {
  label: string;
  busy: boolean;
  confirmLabel: string;
  busyLabel: string;
  onConfirm: () => void;
  onKeep: () => void;
  children: ReactNode;
}) {
  return (
    <fieldset className="confirm" aria-label={props.label}>
      <p>{props.children}</p>
      <div className="actions">
        <button
          type="button"
          className="danger"
          onClick={() => {
            warnByTouch();
            props.onConfirm();
          }}
          disabled={props.busy}
        >
          {props.busy ? props.busyLabel : props.confirmLabel}
        </button>
        <button type="button" className="secondary" onClick={props.onKeep} disabled={props.busy}>
          Keep it
        </button>
      </div>
    </fieldset>
  );
}

/** A form's save: `saving` while `work` runs, and the message of its failure (or one given by `fail`). */
export function useSaving() {
  const [state, setState] = useState<{ saving: boolean; error: string | null }>({ saving: false, error: null });
  const save = async (work: () => Promise<void>) => {
    setState({ saving: true, error: null });
    try {
      await work();
    } catch (error) {
      setState({ saving: false, error: (error as Error).message });
    }
  };
  return { ...state, save, fail: (error: string) => setState({ saving: false, error }) };
}
