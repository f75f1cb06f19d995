-- One statement to begin a session's turn (was three round trips per turn: the agent's
-- maxConcurrentSessions, then the lease and claim, then the admission's own control signal).

-- The claimed admission also carries its own control signal (`own_signal`: kind and whether a turn
-- acted on it, NULL when it has none), so the turn needs no read of its own for it. Read through
-- session_signals' (session_id, created_at) index.
CREATE OR REPLACE FUNCTION hermes_claim_next(p_session uuid, p_owner uuid, p_epoch bigint) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  r admissions;
BEGIN
  UPDATE admissions SET state = 'started', owner_instance_id = p_owner, owner_epoch = p_epoch, started_at = now(), updated_at = now()
    WHERE id = (SELECT id FROM admissions WHERE session_id = p_session AND state = 'queued' ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED)
    RETURNING * INTO r;
  IF r.id IS NULL THEN
    RETURN NULL;
  END IF;
  IF r.intent = 'resume' THEN
    UPDATE sessions SET state = 'active' WHERE id = p_session AND state = 'resume_pending';
  ELSE
    PERFORM hermes_append_message(p_session, 'user', r.content, r.id, false, NULL, NULL, NULL, NULL);
  END IF;
  RETURN to_jsonb(r) || jsonb_build_object('own_signal', (
    SELECT jsonb_build_object('kind', g.kind, 'consumed', g.consumed_at IS NOT NULL) FROM session_signals g
    WHERE g.session_id = p_session AND g.admission_id = r.id ORDER BY g.created_at LIMIT 1));
END $$;

-- hermes_start_turn under the agent's maxConcurrentSessions (its current revision), in one
-- statement: with a cap, starts of the agent's sessions are serialised by a transaction-scoped
-- advisory lock and `o_full` says the cap's other sessions all run a turn now (nothing changed:
-- the admissions stay queued). The session's agent and cap come back either way (the drainer
-- wakes the agent's next waiting session when it lets a capped slot go). No row: no such session.
CREATE FUNCTION hermes_begin_turn(p_session uuid, p_owner uuid, p_ttl float8, p_instance_ttl float8, p_steady boolean)
    RETURNS TABLE (o_epoch bigint, o_admission jsonb, o_agent uuid, o_cap integer, o_full boolean) LANGUAGE plpgsql AS $$
DECLARE
  v_agent uuid;
  v_cap integer;
  v_busy integer;
  v_epoch bigint;
  v_adm jsonb;
BEGIN
  SELECT s.agent_id, (r.compiled->>'maxConcurrentSessions')::int INTO v_agent, v_cap
    FROM sessions s JOIN agents a ON a.id = s.agent_id LEFT JOIN config_revisions r ON r.id = a.current_revision_id WHERE s.id = p_session;
  IF v_agent IS NULL THEN
    RETURN;
  END IF;
  IF v_cap IS NOT NULL THEN
    PERFORM pg_advisory_xact_lock(hashtextextended('hermes:slots:' || v_agent::text, 0));
    SELECT count(*)::int INTO v_busy FROM session_leases sl JOIN sessions x ON x.id = sl.session_id
      WHERE x.agent_id = v_agent AND sl.session_id <> p_session AND sl.owner_instance_id IS NOT NULL AND sl.expires_at > now()
        AND NOT hermes_owner_dead(sl.owner_instance_id, p_instance_ttl, p_steady);
    IF v_busy >= v_cap THEN
      RETURN QUERY SELECT NULL::bigint, NULL::jsonb, v_agent, v_cap, true;
      RETURN;
    END IF;
  END IF;
  SELECT t.o_epoch, t.o_admission INTO v_epoch, v_adm FROM hermes_start_turn(p_session, p_owner, p_ttl, p_instance_ttl, p_steady) t;
  RETURN QUERY SELECT v_epoch, v_adm, v_agent, v_cap, false;
END $$;
