import { coherenceRail } from './coherence.rail';
import { complianceRail } from './compliance.rail';
import { dataExfiltrationInputRail, dataLeakOutputRail } from './data-exfiltration.rail';
import { inputSizeRail } from './input-size.rail';
import { linksRail } from './links.rail';
import { maskingRail } from './masking.rail';
import { prematurePromiseRail } from './premature-promise.rail';
import { promptInjectionOutputRail, promptInjectionRail } from './prompt-injection.rail';
import type { RailDefinition } from './rail-definition';
import { toxicityRail } from './toxicity.rail';

/** Every rail code guardrails.yaml may name; any other code is a start-up error. */
export const RAIL_CATALOGUE: ReadonlyMap<string, RailDefinition> = new Map(
  [
    inputSizeRail,
    promptInjectionRail,
    toxicityRail,
    coherenceRail,
    dataExfiltrationInputRail,
    complianceRail,
    maskingRail,
    dataLeakOutputRail,
    promptInjectionOutputRail,
    linksRail,
    prematurePromiseRail,
  ].map((definition) => [definition.code, definition]),
);
