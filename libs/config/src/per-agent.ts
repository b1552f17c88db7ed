/**
 * A configuration that an agents.yaml entry may replace with its own file: `for(agent_id)` gives that agent's
 * value, or the global one when its entry names no file (or the id is unknown).
 */
export class PerAgent<T> {
  constructor(
    readonly global: T,
    private readonly own: ReadonlyMap<string, T>,
  ) {}

  for(agentId: string | null | undefined): T {
    return (agentId ? this.own.get(agentId) : undefined) ?? this.global;
  }

  /** The agent_ids with their own file. */
  agentIds(): string[] {
    return [...this.own.keys()];
  }

  /** Every distinct value, the global one first: what start-up checks and logs go over. */
  distinct(): T[] {
    return [...new Set([this.global, ...this.own.values()])];
  }
}
