import { Inject, Injectable } from '@nestjs/common';
import { ConfigType } from '@nestjs/config';
import { memoryConfig } from '@agent/config';
import type { AgentState, JsonRecord } from '@agent/contracts';

export interface LoadedMemory {
  items: JsonRecord[];
  context: string;
}

/** Facade of MemoryModule: long-term memory load and persist. */
@Injectable()
export class MemoryService {
  constructor(@Inject(memoryConfig.KEY) private readonly config: ConfigType<typeof memoryConfig>) {}

  get enabled(): boolean {
    return this.config.ENABLE_LONG_TERM_MEMORY;
  }

  load(state: AgentState): Promise<LoadedMemory> {
    void state;
    return Promise.resolve({ items: [], context: '' });
  }

  persistTurn(state: AgentState): Promise<JsonRecord> {
    void state;
    return Promise.resolve({ saved: 0 });
  }
}
