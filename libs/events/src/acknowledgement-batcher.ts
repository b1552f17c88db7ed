import type { Acknowledgement } from './event-relay.store';

/** Writes acknowledgements in one statement; returns the conversations whose claim was still held. */
export type AcknowledgementWriter = (acknowledgements: Acknowledgement[]) => Promise<ReadonlySet<string>>;

interface Waiting {
  acknowledgement: Acknowledgement;
  resolve(held: boolean): void;
  reject(error: unknown): void;
}

/**
 * The acknowledgements of one relay pass, written as a group: the first goes out at once, and those that arrive
 * while a statement runs go together in the next. The conversations of a pass finish delivering at about the same
 * time, so a pass of sixteen writes two statements instead of sixteen, and none waits longer than one statement.
 * A conversation sends one acknowledgement at a time (it waits for each), so a group never holds two of one
 * conversation.
 */
export class AcknowledgementBatcher {
  private waiting: Waiting[] = [];
  private writing = false;

  constructor(private readonly write: AcknowledgementWriter) {}

  /** Resolves once written: true while the claim was held, false when another replica took the conversation. */
  acknowledge(acknowledgement: Acknowledgement): Promise<boolean> {
    return new Promise<boolean>((resolve, reject) => {
      this.waiting.push({ acknowledgement, resolve, reject });
      void this.drain();
    });
  }

  private async drain(): Promise<void> {
    if (this.writing) return;
    this.writing = true;
    try {
      while (this.waiting.length > 0) {
        const group = this.waiting;
        this.waiting = [];
        try {
          const held = await this.write(group.map((entry) => entry.acknowledgement));
          for (const entry of group) entry.resolve(held.has(entry.acknowledgement.conversation_key));
        } catch (error) {
          for (const entry of group) entry.reject(error);
        }
      }
    } finally {
      this.writing = false;
    }
  }
}
