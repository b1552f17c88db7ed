/**
 * What a streamed turn tells its client before the final answer (docs/api.md#streaming-the-answer): the
 * routing facts once routing decided, answer text the output rails released, and a rail that tripped.
 */
export type TurnStreamEvent =
  | { event: 'route'; data: Record<string, unknown> }
  | { event: 'answer.delta'; data: { text: string } }
  | { event: 'answer.tripped'; data: { code: string; action: string } };

/** Where an agent writes its model's answer as the model writes it; only what the output rails pass leaves. */
export interface AnswerWriter {
  /**
   * A model reply begins. `toAnswer` turns its raw text so far into the answer it would become (the agent
   * drops a name prefix); a reply that turns into tool calls is followed by a new `begin`.
   */
  begin(toAnswer: (raw: string) => string): void;
  write(delta: string): void;
  /** The reply is complete: releases what the rails pass of it, the window's tail included. */
  end(): Promise<void>;
}

/** A turn's live channel to its client, in the turn context while the client streams the answer. */
export interface TurnStream {
  send(event: TurnStreamEvent): void;
  /** Set once the turn may release answer text (its route is decided and served by one agent). */
  answer?: AnswerWriter;
  /** When (performance.now()) the first answer text left for the client, if any did. */
  firstReleasedAt?: number;
}
