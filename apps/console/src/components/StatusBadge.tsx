const LABELS: Record<string, string> = {
  active: 'active',
  handoff: 'waiting for a person',
  ended: 'ended',
};

/** Session status as text with a colour cue (the text alone carries the meaning). */
export function StatusBadge({ status }: { status: string }) {
  return <span className={`badge badge-${status}`}>{LABELS[status] ?? status}</span>;
}
