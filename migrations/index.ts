import { InitialSchema1764460800000 } from './1764460800000-initial-schema';
import { RagEmbeddings1764547200000 } from './1764547200000-rag-embeddings';
import { SessionLeaseSingleArbiter1764633600000 } from './1764633600000-session-lease-single-arbiter';
import { TurnLog1764806400000 } from './1764806400000-turn-log';
import { SingleCommitTurn1764892800000 } from './1764892800000-single-commit-turn';
import { Retention1764979200000 } from './1764979200000-retention';
import { EventRelay1765065600000 } from './1765065600000-event-relay';
import { DeadLetterPrivacy1765152000000 } from './1765152000000-dead-letter-privacy';
import { WebhookAttempts1765238400000 } from './1765238400000-webhook-attempts';
import { CompactTurnStorage1765324800000 } from './1765324800000-compact-turn-storage';
import { ResponseInTurnLog1765411200000 } from './1765411200000-response-in-turn-log';
import { TurnLogEnvelope1765497600000 } from './1765497600000-turn-log-envelope';
import { NodeTimingsOnce1765584000000 } from './1765584000000-node-timings-once';
import { RelayBacklog1765670400000 } from './1765670400000-relay-backlog';
import { CheckpointsKeyedByConversation1765756800000 } from './1765756800000-checkpoints-keyed-by-conversation';
import { DeadLetterRedeliveryClaim1765843200000 } from './1765843200000-dead-letter-redelivery-claim';
import { FirstTextInTurnLog1765929600000 } from './1765929600000-first-text-in-turn-log';

/** Every migration, in order. Listed explicitly so compiled and test builds load the same set. */
export const ALL_MIGRATIONS = [
  InitialSchema1764460800000,
  RagEmbeddings1764547200000,
  SessionLeaseSingleArbiter1764633600000,
  TurnLog1764806400000,
  SingleCommitTurn1764892800000,
  Retention1764979200000,
  EventRelay1765065600000,
  DeadLetterPrivacy1765152000000,
  WebhookAttempts1765238400000,
  CompactTurnStorage1765324800000,
  ResponseInTurnLog1765411200000,
  TurnLogEnvelope1765497600000,
  NodeTimingsOnce1765584000000,
  RelayBacklog1765670400000,
  CheckpointsKeyedByConversation1765756800000,
  DeadLetterRedeliveryClaim1765843200000,
  FirstTextInTurnLog1765929600000,
];
