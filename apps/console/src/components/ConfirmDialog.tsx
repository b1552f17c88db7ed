import { useEffect, useRef, useState, type ReactNode } from 'react';

interface Props {
  title: string;
  children: ReactNode;
  confirmLabel: string;
  /** Offer a free-text reason (stored with the operator's event). */
  withReason?: boolean;
  danger?: boolean;
  onConfirm: (reason: string) => void;
  onCancel: () => void;
}

/**
 * A modal confirmation on the native <dialog>: it traps focus, closes on Escape and returns focus to the
 * button that opened it, without a library.
 */
export function ConfirmDialog({
  title,
  children,
  confirmLabel,
  withReason,
  danger,
  onConfirm,
  onCancel,
}: Props) {
  const dialog = useRef<HTMLDialogElement>(null);
  const [reason, setReason] = useState('');
  useEffect(() => {
    const element = dialog.current;
    element?.showModal();
    return () => element?.close();
  }, []);
  return (
    <dialog ref={dialog} aria-labelledby="confirm-title" onCancel={onCancel} className="confirm">
      <form
        method="dialog"
        onSubmit={(event) => {
          event.preventDefault();
          onConfirm(reason.trim());
        }}
      >
        <h2 id="confirm-title">{title}</h2>
        <div>{children}</div>
        {withReason && (
          <div className="field">
            <label htmlFor="confirm-reason">Reason (optional, kept with the event)</label>
            <input
              id="confirm-reason"
              value={reason}
              maxLength={500}
              onChange={(event) => setReason(event.target.value)}
            />
          </div>
        )}
        <div className="actions">
          <button type="button" className="secondary" onClick={onCancel}>
            Cancel
          </button>
          <button type="submit" className={danger ? 'danger' : undefined}>
            {confirmLabel}
          </button>
        </div>
      </form>
    </dialog>
  );
}
