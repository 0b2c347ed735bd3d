// "Forgot Dune. Undo": the last destructive action, offered back for a while, and what went wrong.
import { useEffect, useRef, useState } from "react";

const OFFER_MS = 15_000;

type Offer = { message: string; undo: (() => Promise<void>) | null; state: "offered" | "undoing" | "failed" };

export function useUndo() {
  const [offer, setOffer] = useState<Offer | null>(null);
  const timer = useRef<ReturnType<typeof setTimeout> | undefined>(undefined);
  useEffect(() => () => clearTimeout(timer.current), []);
  const show = (next: Offer | null) => {
    clearTimeout(timer.current);
    setOffer(next);
    if (next?.state === "offered") timer.current = setTimeout(() => setOffer(null), OFFER_MS);
  };
  return {
    current: offer,
    offer: (message: string, undo: () => Promise<void>) => show({ message, undo, state: "offered" }),
    fail: (message: string) => show({ message, undo: null, state: "failed" }),
    dismiss: () => show(null),
    run: async () => {
      if (!offer?.undo) return;
      setOffer({ ...offer, state: "undoing" });
      try {
        await offer.undo();
        show(null);
      } catch (error) {
        show({ message: `Undo failed: ${(error as Error).message}`, undo: null, state: "failed" });
      }
    },
  };
}

export function UndoBar({ undo }: { undo: ReturnType<typeof useUndo> }) {
  const offer = undo.current;
  if (!offer) return null;
  return (
    <div className={offer.state === "failed" ? "toast error-box" : "toast"} role={offer.state === "failed" ? "alert" : "status"}>
      <span>{offer.message}</span>
      {offer.undo && (
        <button type="button" className="secondary" onClick={() => void undo.run()} disabled={offer.state === "undoing"}>
          {offer.state === "undoing" ? "Undoing…" : "Undo"}
        </button>
      )}
      <button type="button" className="secondary" aria-label="Dismiss" onClick={undo.dismiss}>
        ×
      </button>
    </div>
  );
}
