/**
 * A configuration that an agents.yaml entry may replace with its own file: `for(agent_id)` gives that agent's
 * value, or the global one when its entry names no file (or the id is unknown).
 */
export class PerAgent<T> {
  /**
   * `agents`: every agent_id of agents.yaml, so `users` can name the agents of the global value too; by
   * default only those with their own file.
   */
  constructor(
    readonly global: T,
    private readonly own: ReadonlyMap<string, T>,
    private readonly agents: readonly string[] = [...own.keys()],
  ) {}

  for(agentId: string | null | undefined): T {
    return (agentId ? this.own.get(agentId) : undefined) ?? this.global;
  }

  /** The agent_ids with their own file. */
  agentIds(): string[] {
    return [...this.own.keys()];
  }

  /** The same agents sharing the same values, each distinct value mapped once. */
  map<U>(fn: (value: T) => U): PerAgent<U> {
    const mapped = new Map<T, U>();
    const once = (value: T): U => {
      const known = mapped.get(value);
      if (known !== undefined) return known;
      const made = fn(value);
      mapped.set(value, made);
      return made;
    };
    return new PerAgent(
      once(this.global),
      new Map([...this.own].map(([id, value]) => [id, once(value)])),
      this.agents,
    );
  }

  /** Every distinct value, the global one first: what start-up checks and logs go over. */
  distinct(): T[] {
    return [...new Set([this.global, ...this.own.values()])];
  }

  /** Every distinct value with the agent_ids whose turns use it: what the operator surfaces report. */
  users(): { value: T; agents: string[] }[] {
    return this.distinct().map((value) => ({
      value,
      agents: this.agents.filter((agentId) => this.for(agentId) === value),
    }));
  }
}
