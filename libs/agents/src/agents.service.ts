import { Injectable, Logger } from '@nestjs/common';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { ConfigFilesService } from '@agent/config';
import type { AgentState, DomainAgentNode } from '@agent/contracts';
import { ChatMessage, LlmError, LlmService } from '@agent/llm';

/** Said when the agent's LLM cannot answer (not configured, timeout, error). */
export const AGENT_UNAVAILABLE_MESSAGE =
  'Não consegui concluir sua solicitação agora. Por favor, tente novamente em instantes.';

/** Facade of AgentsModule: one runtime for the four domain agents. */
@Injectable()
export class AgentsService {
  private readonly logger = new Logger(AgentsService.name);
  private readonly promptCache = new Map<string, string>();

  constructor(
    private readonly files: ConfigFilesService,
    private readonly llm: LlmService,
  ) {}

  async run(node: DomainAgentNode, state: AgentState): Promise<Partial<AgentState>> {
    const graphAgent = this.files.agents.graph_agents[node];
    const messages: ChatMessage[] = [
      { role: 'system', content: this.systemPrompt(node, state) },
      ...(state.history ?? []).slice(-12).map((m): ChatMessage => ({ role: m.role, content: m.content })),
      { role: 'user', content: state.sanitized_input ?? state.user_text ?? '' },
    ];
    try {
      const result = await this.llm.chat({ profile: graphAgent.llm_profile, messages });
      return { answer: (result.content ?? '').trim() || AGENT_UNAVAILABLE_MESSAGE };
    } catch (error) {
      if (!(error instanceof LlmError)) throw error;
      this.logger.warn(`${node} could not answer: ${error.message}`);
      return { answer: AGENT_UNAVAILABLE_MESSAGE };
    }
  }

  /** A new answer for the same turn, following the output supervisor's guidance; null when it cannot. */
  async regenerate(node: DomainAgentNode, state: AgentState, guidance: string): Promise<string | null> {
    const graphAgent = this.files.agents.graph_agents[node];
    const messages: ChatMessage[] = [
      { role: 'system', content: this.systemPrompt(node, state) },
      ...(state.history ?? []).slice(-12).map((m): ChatMessage => ({ role: m.role, content: m.content })),
      { role: 'user', content: state.sanitized_input ?? state.user_text ?? '' },
      { role: 'assistant', content: state.answer ?? '' },
      {
        role: 'system',
        content: `Reescreva a resposta anterior seguindo esta orientação de supervisão: ${guidance}`,
      },
    ];
    try {
      const result = await this.llm.chat({ profile: graphAgent.llm_profile, messages });
      return (result.content ?? '').trim() || null;
    } catch (error) {
      if (!(error instanceof LlmError)) throw error;
      return null;
    }
  }

  /** agents.yaml system_prefix of the agent_id, the graph agent's prompt (per-agent_id override first), memory. */
  systemPrompt(node: DomainAgentNode, state: AgentState): string {
    const profile =
      this.files.agents.agents[state.agent_id ?? ''] ??
      this.files.agents.agents[this.files.agents.default_agent_id];
    const parts = [profile?.system_prefix ?? '', this.prompt(node, profile?.prompts_dir)];
    if (state.long_term_memory_context)
      parts.push(`Fatos conhecidos sobre o cliente:\n${state.long_term_memory_context}`);
    return parts.filter((p) => p.trim() !== '').join('\n\n');
  }

  private prompt(node: DomainAgentNode, promptsDir: string | undefined): string {
    const cacheKey = `${promptsDir ?? ''}|${node}`;
    const cached = this.promptCache.get(cacheKey);
    if (cached !== undefined) return cached;
    const override = promptsDir ? this.files.path(join(promptsDir, `${node}.md`)) : null;
    const path =
      override && existsSync(override)
        ? override
        : this.files.path(this.files.agents.graph_agents[node].prompt);
    const text = existsSync(path) ? readFileSync(path, 'utf8').trim() : '';
    this.promptCache.set(cacheKey, text);
    return text;
  }
}
