import { z } from 'zod';
import type { TurnState } from '@agent/contracts';
import { RailAction, RailEvaluation } from '../rail.types';
import { llmParamsShape } from './model-verdict';
import { defineRail } from './rail-definition';

/** Transaction steps where short answers ("sim", "2", "TIM Music") are expected and the agent judges them. */
const DELEGATED_NEXT_STATE = /^(COLLECTING_[A-Z0-9_]+_PARAMETERS|WAITING_[A-Z0-9_]+_CONFIRMATION)$/;

export function coherenceDelegated(state: Readonly<TurnState>, statuses: readonly string[]): boolean {
  if (state.transaction_status && statuses.includes(state.transaction_status)) return true;
  return typeof state.next_state === 'string' && DELEGATED_NEXT_STATE.test(state.next_state);
}

const COER_INSTRUCTION =
  'block only a message no one could understand even with the conversation (random or broken text); short replies, greetings and thanks are fine.';

/** COER: coherence by the guardrail model; delegated to the agent while a transaction collects parameters. */
export const coherenceRail = defineRail({
  code: 'COER',
  stages: ['input'],
  params: z
    .object({
      ...llmParamsShape,
      /** `transaction_status` values during which the agent, not this rail, judges the reply. */
      delegate_statuses: z.array(z.string()).default(['COLLECTING_PARAMETERS', 'AWAITING_CONFIRMATION']),
    })
    .strict(),
  usesLlm: () => true,
  create: (params) => ({
    code: 'COER',
    evaluate: ({ state }): Promise<RailEvaluation> =>
      Promise.resolve<RailEvaluation>(
        coherenceDelegated(state, params.delegate_statuses)
          ? {
              action: RailAction.ALLOW,
              reason: 'delegated to the agent while the transaction collects parameters',
              metadata: { delegated: true, transaction_status: state.transaction_status ?? null },
            }
          : {
              action: RailAction.ALLOW,
              reason: 'judged by the guardrail model',
              metadata: { delegated: false },
            },
      ),
    modelCheck: ({ state }) =>
      coherenceDelegated(state, params.delegate_statuses)
        ? null
        : {
            instruction: COER_INSTRUCTION,
            minConfidence: params.min_confidence,
            blockAction: RailAction.BLOCK,
            historyMessages: 2,
          },
  }),
});
