/**
 * The capacity model bench:overhead prints: from its per-turn measurements, what a deployment needs at a given
 * rate of turns. Pure arithmetic, so the table and the inputs it used always come out of the same run.
 */

/** What one turn costs, as bench:overhead measured it (at its loaded phase unless said otherwise). */
export interface CapacityInputs {
  /** CPU of the service process per turn, ms. */
  nodeCpuMs: number;
  /** CPU of the Postgres backends serving it per turn, ms. */
  postgresCpuMs: number;
  /** WAL per turn, bytes (the bench database's own when attributed, else the server's). */
  walBytes: number;
  /** WAL flushes per turn (server-wide), when counted. */
  walFlushes: number | null;
  /** Live bytes per turn of the rows that age out (turn log, idempotency records, failed runs). */
  agedBytesPerTurn: number;
  /** Live bytes per conversation of the rows that stay (session row, the kept checkpoint versions). */
  keptBytesPerConversation: number;
  /** Turns per conversation of the conversations those bytes were measured on. */
  turnsPerConversation: number;
  /** Events each turn publishes, and the bytes of one as a destination receives it. */
  eventsPerTurn: number;
  eventBytes: number;
}

/** The assumptions the table states beside the inputs. */
export interface CapacityAssumptions {
  /** Share of a core a replica or a Postgres core is planned to run at (headroom for peaks and failover). */
  utilization: number;
  /** Cores one service replica uses: its JavaScript runs on one thread. */
  coresPerReplica: number;
  /** Cores of one Postgres node (a single server, or a worker of a distributed one). */
  coresPerPostgresNode: number;
  /** Days the turn log and the idempotency records are kept (TURN_LOG_RETENTION_DAYS). */
  retentionDays: number;
}

export const DEFAULT_ASSUMPTIONS: CapacityAssumptions = {
  utilization: 0.6,
  coresPerReplica: 1,
  coresPerPostgresNode: 16,
  retentionDays: 30,
};

export interface CapacityRow {
  turnsPerSecond: number;
  replicas: number;
  serviceCores: number;
  postgresCores: number;
  postgresNodes: number;
  walPerDayBytes: number;
  /** Rows written per day that age out, and what they come to once retention is reached. */
  agedPerDayBytes: number;
  agedSteadyBytes: number;
  /** Rows that stay, per day of new conversations. */
  keptPerDayBytes: number;
  eventsPerSecond: number;
  eventBytesPerSecond: number;
}

const DAY_SECONDS = 86_400;

export function capacityRow(
  inputs: CapacityInputs,
  turnsPerSecond: number,
  assumptions: CapacityAssumptions = DEFAULT_ASSUMPTIONS,
): CapacityRow {
  const serviceBusy = (inputs.nodeCpuMs * turnsPerSecond) / 1000;
  const replicas = Math.max(
    1,
    Math.ceil(serviceBusy / (assumptions.coresPerReplica * assumptions.utilization)),
  );
  const postgresCores = Math.ceil((inputs.postgresCpuMs * turnsPerSecond) / 1000 / assumptions.utilization);
  const turnsPerDay = turnsPerSecond * DAY_SECONDS;
  const agedPerDayBytes = inputs.agedBytesPerTurn * turnsPerDay;
  return {
    turnsPerSecond,
    replicas,
    serviceCores: replicas * assumptions.coresPerReplica,
    postgresCores,
    postgresNodes: Math.max(1, Math.ceil(postgresCores / assumptions.coresPerPostgresNode)),
    walPerDayBytes: inputs.walBytes * turnsPerDay,
    agedPerDayBytes,
    agedSteadyBytes: agedPerDayBytes * assumptions.retentionDays,
    keptPerDayBytes: (inputs.keptBytesPerConversation * turnsPerDay) / inputs.turnsPerConversation,
    eventsPerSecond: inputs.eventsPerTurn * turnsPerSecond,
    eventBytesPerSecond: inputs.eventsPerTurn * inputs.eventBytes * turnsPerSecond,
  };
}

/** Bytes in the largest unit that keeps the figure at or above 1 (decimal: what disks and links are sold in). */
export function bytes(value: number): string {
  const units = ['B', 'KB', 'MB', 'GB', 'TB', 'PB'];
  let unit = 0;
  let scaled = value;
  while (scaled >= 1000 && unit < units.length - 1) {
    scaled /= 1000;
    unit++;
  }
  return `${scaled >= 100 ? Math.round(scaled) : Math.round(scaled * 10) / 10} ${units[unit]}`;
}

/** The inputs as the report lists them, each with where it comes from. */
export function capacityInputLines(inputs: CapacityInputs): string[] {
  const round = (value: number, digits = 2) => Math.round(value * 10 ** digits) / 10 ** digits;
  return [
    `- Node CPU per turn: ${round(inputs.nodeCpuMs)} ms (service process, loaded phase)`,
    `- Postgres CPU per turn: ${round(inputs.postgresCpuMs)} ms (its backends, loaded phase)`,
    `- WAL per turn: ${bytes(inputs.walBytes)}${inputs.walFlushes === null ? '' : `, ${round(inputs.walFlushes)} flushes`}`,
    `- rows that age out, per turn: ${bytes(inputs.agedBytesPerTurn)} (turn log, idempotency records, failed runs, as stored)`,
    `- rows kept, per conversation: ${bytes(inputs.keptBytesPerConversation)} (session row and kept checkpoint versions, conversations of ${inputs.turnsPerConversation} turns)`,
    `- events per turn: ${round(inputs.eventsPerTurn)}, ${bytes(inputs.eventBytes)} each as a destination receives it`,
  ];
}

/** The table for the given rates, as markdown lines. */
export function capacityTable(
  inputs: CapacityInputs,
  rates: number[],
  assumptions: CapacityAssumptions = DEFAULT_ASSUMPTIONS,
): string[] {
  const rows = rates.map((rate) => capacityRow(inputs, rate, assumptions));
  return [
    '| turns/s | service replicas (cores) | Postgres cores (nodes) | WAL per day | aged rows per day (kept ' +
      `${assumptions.retentionDays} days) | kept rows per day | events/s (NATS messages, webhook requests per subscribed endpoint) | event bytes/s |`,
    '|---|---|---|---|---|---|---|---|',
    ...rows.map(
      (row) =>
        `| ${row.turnsPerSecond.toLocaleString('en-US')} | ${row.replicas} (${row.serviceCores}) | ${row.postgresCores} (${row.postgresNodes}) | ` +
        `${bytes(row.walPerDayBytes)} | ${bytes(row.agedPerDayBytes)} (${bytes(row.agedSteadyBytes)} at steady state) | ` +
        `${bytes(row.keptPerDayBytes)} | ${Math.round(row.eventsPerSecond).toLocaleString('en-US')} | ${bytes(row.eventBytesPerSecond)}/s |`,
    ),
  ];
}
