import { MigrationInterface, QueryRunner } from 'typeorm';

/**
 * The event relay stops ordering commits by transaction id, which orders them on one node only (ADR 0010). Each
 * commit and each failed run of a conversation has a position in it (`version × 65536 + attempt`: attempt 0 is the
 * commit of that version, 1… the runs that failed on it), and per destination a conversation with undelivered
 * positions has one backlog row: the next position to deliver and the last one written. A trigger writes that row in
 * the transaction of every turn log row and failed-run record, whichever release inserts it, so replicas of the
 * earlier release that still commit during a rolling deploy are covered too, and a backlog row is visible exactly
 * when its commit is. Every statement on it names one conversation or scans one destination's rows, so the relay
 * works the same on one node, on hash partitions and on shards.
 *
 * A workflow run that fails keeps its failure events (NOC.005, workflow_telemetry.failed) in `turn_failures`,
 * written with the release of its lease: they have no checkpoint version, so they take the position after the head
 * they ran on.
 *
 * The earlier release's relay (watermark, per-conversation positions, `turn_log.commit_xid`) keeps its tables and
 * column for the replicas still running it; the commits they have not delivered yet become backlog rows here, so
 * nothing is lost when the last of them stops (events committed while both run may arrive twice, with the same id).
 * A destination's registration gains its tenant (the trigger queues only its conversations) and an expiry that
 * the replicas relaying it keep pushing forward: one that no replica has relayed for as long as the turn log keeps
 * rows gets nothing more queued.
 */
export class RelayBacklog1765670400000 implements MigrationInterface {
  name = 'RelayBacklog1765670400000';

  async up(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`
      CREATE TABLE turn_failures (
        conversation_key text NOT NULL,
        version integer NOT NULL,
        attempt integer NOT NULL,
        turn integer NOT NULL,
        tenant_id text NOT NULL,
        agent_id text NOT NULL,
        events text NOT NULL,
        created_at timestamptz NOT NULL DEFAULT now(),
        PRIMARY KEY (conversation_key, version, attempt)
      )`);
    await queryRunner.query(`CREATE INDEX turn_failures_created_idx ON turn_failures (created_at)`);
    await queryRunner.query(`
      ALTER TABLE event_relay_destinations
        ADD COLUMN tenant_id text,
        ADD COLUMN expires_at timestamptz NOT NULL DEFAULT now() + make_interval(days => 30),
        ALTER COLUMN watermark DROP NOT NULL`);
    await queryRunner.query(`
      CREATE TABLE event_relay_backlog (
        destination text NOT NULL,
        conversation_key text NOT NULL,
        next_position bigint NOT NULL,
        last_position bigint NOT NULL,
        queued_at timestamptz NOT NULL DEFAULT now(),
        lease_owner text,
        lease_expires_at timestamptz,
        PRIMARY KEY (destination, conversation_key)
      )`);
    await queryRunner.query(
      `CREATE INDEX event_relay_backlog_queue_idx ON event_relay_backlog (destination, queued_at)`,
    );
    await queryRunner.query(`
      CREATE FUNCTION event_relay_enqueue(conversation_key text, tenant_id text, item_position bigint) RETURNS void
      LANGUAGE sql AS $$
        INSERT INTO event_relay_backlog AS b (destination, conversation_key, next_position, last_position)
        SELECT d.destination, $1, $3, $3 FROM event_relay_destinations d
         WHERE d.expires_at > now() AND (d.tenant_id IS NULL OR d.tenant_id = $2)
        ON CONFLICT (destination, conversation_key)
        DO UPDATE SET last_position = greatest(b.last_position, EXCLUDED.last_position)
      $$`);
    await queryRunner.query(`
      CREATE FUNCTION event_relay_enqueue_commit() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM event_relay_enqueue(NEW.conversation_key, NEW.tenant_id, NEW.version::bigint * 65536);
          RETURN NULL;
        END $$`);
    await queryRunner.query(`
      CREATE FUNCTION event_relay_enqueue_failure() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          PERFORM event_relay_enqueue(NEW.conversation_key, NEW.tenant_id, NEW.version::bigint * 65536 + NEW.attempt);
          RETURN NULL;
        END $$`);
    // The trigger's lock on turn_log waits for the commits in flight, so each commit either fires it or is seen
    // by the backlog filled below.
    await queryRunner.query(`
      CREATE TRIGGER event_relay_enqueue AFTER INSERT ON turn_log
      FOR EACH ROW EXECUTE FUNCTION event_relay_enqueue_commit()`);
    await queryRunner.query(`
      CREATE TRIGGER event_relay_enqueue AFTER INSERT ON turn_failures
      FOR EACH ROW EXECUTE FUNCTION event_relay_enqueue_failure()`);
    // What each destination of the earlier relay has not delivered yet (its tenant filter was not stored: the
    // relay applies it again when it reads).
    await queryRunner.query(`
      INSERT INTO event_relay_backlog (destination, conversation_key, next_position, last_position)
      SELECT d.destination, t.conversation_key, min(t.version)::bigint * 65536, max(t.version)::bigint * 65536
        FROM turn_log t
        JOIN event_relay_destinations d ON t.commit_xid >= d.watermark
        LEFT JOIN event_relay_positions p ON p.destination = d.destination AND p.conversation_key = t.conversation_key
       WHERE p.delivered_xid IS NULL OR (t.commit_xid, t.version) > (p.delivered_xid, p.delivered_version)
       GROUP BY d.destination, t.conversation_key`);
  }

  async down(queryRunner: QueryRunner): Promise<void> {
    await queryRunner.query(`DROP TRIGGER event_relay_enqueue ON turn_failures`);
    await queryRunner.query(`DROP TRIGGER event_relay_enqueue ON turn_log`);
    await queryRunner.query(`DROP FUNCTION event_relay_enqueue_failure()`);
    await queryRunner.query(`DROP FUNCTION event_relay_enqueue_commit()`);
    await queryRunner.query(`DROP FUNCTION event_relay_enqueue(text, text, bigint)`);
    await queryRunner.query(`DROP TABLE event_relay_backlog`);
    // The earlier relay resumes from its own watermark and positions: what this release delivered since may be
    // delivered again (same ids). A destination registered since starts at the revert.
    await queryRunner.query(
      `UPDATE event_relay_destinations SET watermark = pg_snapshot_xmin(pg_current_snapshot()) WHERE watermark IS NULL`,
    );
    await queryRunner.query(`
      ALTER TABLE event_relay_destinations
        DROP COLUMN tenant_id, DROP COLUMN expires_at, ALTER COLUMN watermark SET NOT NULL`);
    await queryRunner.query(`DROP TABLE turn_failures`);
  }
}
