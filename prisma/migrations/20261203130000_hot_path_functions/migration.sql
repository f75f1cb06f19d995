-- The hot path of a turn as functions: each is one round trip and one atomic statement instead of
-- a client-side transaction of 4–8 statements (BEGIN … COMMIT). The TypeScript wrappers in
-- services/core/ledger call them; the rules are the same as before (and the state-machine
-- triggers still check every transition). Prisma's schema diff does not model functions, so they
-- do not show as drift. A lost lease is raised as SQLSTATE HL001 (LeaseLostError in TypeScript).

-- Is the owner `p_owner` dead for a judge that is `p_steady` (ADR 0002)? No row, stopped, or — for a
-- steady judge only — a heartbeat older than the instance TTL. The one definition the ledger uses.
CREATE FUNCTION hermes_owner_dead(p_owner uuid, p_instance_ttl float8, p_steady boolean) RETURNS boolean LANGUAGE sql STABLE AS $$
  SELECT NOT EXISTS (SELECT 1 FROM worker_instances wi WHERE wi.id = p_owner AND wi.stopped_at IS NULL
                      AND (NOT p_steady OR wi.heartbeat_at > now() - make_interval(secs => p_instance_ttl)))
$$;

-- Appends one message to a session's transcript (the session row is the sequence counter).
CREATE FUNCTION hermes_append_message(p_session uuid, p_role message_role, p_content text, p_admission uuid,
    p_interrupted boolean, p_usage jsonb, p_tool_calls jsonb, p_tool_call_id text, p_disposition effect_disposition,
    OUT o_id bigint, OUT o_seq integer) LANGUAGE plpgsql AS $$
BEGIN
  UPDATE sessions SET last_seq = last_seq + 1, updated_at = now() WHERE id = p_session RETURNING last_seq INTO o_seq;
  IF o_seq IS NULL THEN
    RAISE EXCEPTION 'session % does not exist', p_session USING ERRCODE = 'foreign_key_violation';
  END IF;
  INSERT INTO messages (session_id, seq, role, content, admission_id, interrupted, usage, tool_calls, tool_call_id, effect_disposition)
  VALUES (p_session, o_seq, p_role, p_content, p_admission, COALESCE(p_interrupted, false), p_usage, p_tool_calls, p_tool_call_id, p_disposition)
  RETURNING id INTO o_id;
END $$;

-- Records one input: dedupe row, user, session (a suspended one is replaced) and admission.
CREATE FUNCTION hermes_admit(p_id uuid, p_agent uuid, p_platform text, p_key text, p_user text, p_display text,
    p_event text, p_intent admission_intent, p_content text, p_history jsonb, p_target jsonb, p_trace jsonb)
    RETURNS TABLE (o_admission uuid, o_session uuid, o_user uuid, o_duplicate boolean) LANGUAGE plpgsql AS $$
DECLARE
  v_user uuid;
  v_display text;
  v_session uuid;
  v_state session_state;
  v_new uuid;
BEGIN
  IF p_event IS NOT NULL THEN
    INSERT INTO inbound_events (agent_id, source, event_id, admission_id) VALUES (p_agent, p_platform, p_event, p_id) ON CONFLICT DO NOTHING;
    IF NOT FOUND THEN
      RETURN QUERY SELECT a.id, a.session_id, a.user_id, true FROM inbound_events e JOIN admissions a ON a.id = e.admission_id
        WHERE e.agent_id = p_agent AND e.source = p_platform AND e.event_id = p_event;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'inbound event %/% exists without its admission', p_platform, p_event;
      END IF;
      RETURN;
    END IF;
  END IF;
  -- The user: read first, so a known user's row is not rewritten by every message.
  SELECT u.id, u.display_name INTO v_user, v_display FROM users u WHERE u.agent_id = p_agent AND u.platform = p_platform AND u.platform_user_id = p_user;
  IF v_user IS NULL THEN
    INSERT INTO users AS u (id, agent_id, platform, platform_user_id, display_name) VALUES (gen_random_uuid(), p_agent, p_platform, p_user, p_display)
      ON CONFLICT (agent_id, platform, platform_user_id) DO UPDATE SET display_name = COALESCE(EXCLUDED.display_name, u.display_name)
      RETURNING u.id INTO v_user;
  ELSIF p_display IS NOT NULL AND p_display IS DISTINCT FROM v_display THEN
    UPDATE users SET display_name = p_display WHERE id = v_user;
  END IF;
  SELECT k.session_id, s.state INTO v_session, v_state FROM session_keys k JOIN sessions s ON s.id = k.session_id
    WHERE k.agent_id = p_agent AND k.key = p_key;
  IF v_session IS NULL OR v_state = 'suspended' THEN
    v_new := gen_random_uuid();
    INSERT INTO sessions (id, agent_id, user_id, session_key, updated_at) VALUES (v_new, p_agent, v_user, p_key, now());
    -- Rebinding a suspended session's key is conditional on the binding read, so racing admits agree on one.
    INSERT INTO session_keys AS k (agent_id, key, session_id, updated_at) VALUES (p_agent, p_key, v_new, now())
      ON CONFLICT (agent_id, key) DO UPDATE
        SET session_id = CASE WHEN k.session_id = v_session THEN EXCLUDED.session_id ELSE k.session_id END, updated_at = now()
      RETURNING k.session_id INTO v_session;
    IF v_session <> v_new THEN
      DELETE FROM sessions WHERE id = v_new;
    END IF;
  END IF;
  INSERT INTO admissions (id, agent_id, session_id, user_id, platform, intent, content, caller_history, reply_target, trace_context)
    VALUES (p_id, p_agent, v_session, v_user, p_platform, p_intent, p_content, p_history, p_target, p_trace);
  RETURN QUERY SELECT p_id, v_session, v_user, false;
END $$;

-- The lease holder's next turn: the session's oldest queued admission becomes `started` and the
-- user's message joins the transcript (a resume continues the transcript: nothing to add). NULL
-- when nothing is queued. The caller holds the lease (it just took it, or has it locked).
CREATE FUNCTION hermes_claim_next(p_session uuid, p_owner uuid, p_epoch bigint) RETURNS jsonb LANGUAGE plpgsql AS $$
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
  RETURN to_jsonb(r);
END $$;

-- Takes the session lease (free, expired, or held by an owner known dead — see ADR 0002) and
-- claims its next turn. Nothing queued: the lease is let go in the same statement (any worker
-- trying to take it meanwhile waits for this row lock and then finds it free). No row: a live
-- holder has it.
CREATE FUNCTION hermes_start_turn(p_session uuid, p_owner uuid, p_ttl float8, p_instance_ttl float8, p_steady boolean)
    RETURNS TABLE (o_epoch bigint, o_admission jsonb) LANGUAGE plpgsql AS $$
DECLARE
  v_epoch bigint;
  v_adm jsonb;
BEGIN
  INSERT INTO session_leases AS sl (session_id, owner_instance_id, epoch, acquired_at, renewed_at, expires_at)
    VALUES (p_session, p_owner, 1, now(), now(), now() + make_interval(secs => p_ttl))
    ON CONFLICT (session_id) DO UPDATE
      SET owner_instance_id = EXCLUDED.owner_instance_id, epoch = sl.epoch + 1, acquired_at = now(), renewed_at = now(), expires_at = EXCLUDED.expires_at
      WHERE sl.owner_instance_id IS NULL OR sl.expires_at < now() OR hermes_owner_dead(sl.owner_instance_id, p_instance_ttl, p_steady)
    RETURNING sl.epoch INTO v_epoch;
  IF v_epoch IS NULL THEN
    RETURN;
  END IF;
  v_adm := hermes_claim_next(p_session, p_owner, v_epoch);
  IF v_adm IS NULL THEN
    UPDATE session_leases SET owner_instance_id = NULL, expires_at = NULL WHERE session_id = p_session AND epoch = v_epoch;
  END IF;
  RETURN QUERY SELECT v_epoch, v_adm;
END $$;

-- Ends a turn: final message, reply obligation (already delivered for a pulled platform, e.g.
-- api), `terminal`, the shutdown-cut streak reset, the turn's deferred usage rows — only while
-- (owner, epoch) holds an unexpired lease, else SQLSTATE HL001. Then `p_then`: 'keep' the lease,
-- 'release' it, or claim the 'next' queued turn under the same lease (none queued: release). A
-- session prompt the turn built (`p_prompt`, `p_identity`) is stored with it.
-- The lease row is locked first, so a worker trying to take it meanwhile waits and then sees the
-- outcome: no admission is stranded between "nothing queued" and the release.
CREATE FUNCTION hermes_finish_turn(p_admission uuid, p_owner uuid, p_epoch bigint, p_outcome admission_outcome,
    p_reply text, p_error text, p_interrupted boolean, p_usage jsonb, p_usage_rows jsonb, p_pulled text[], p_then text,
    p_prompt text, p_identity text)
    RETURNS TABLE (o_obligation uuid, o_pending boolean, o_message bigint, o_next jsonb, o_released boolean) LANGUAGE plpgsql AS $$
DECLARE
  v_session uuid;
  v_adm admissions;
  v_msg bigint;
  v_seq integer;
  v_ob uuid;
  v_pending boolean;
  v_next jsonb;
BEGIN
  SELECT sl.session_id INTO v_session FROM session_leases sl
    WHERE sl.session_id = (SELECT session_id FROM admissions WHERE id = p_admission)
      AND sl.owner_instance_id = p_owner AND sl.epoch = p_epoch AND sl.expires_at > now()
    FOR UPDATE;
  SELECT * INTO v_adm FROM admissions
    WHERE id = p_admission AND state = 'started' AND owner_instance_id = p_owner AND owner_epoch = p_epoch FOR UPDATE;
  IF v_session IS NULL OR v_adm.id IS NULL THEN
    RAISE EXCEPTION 'session turn lease lost: admission % was not finished by this worker', p_admission USING ERRCODE = 'HL001';
  END IF;
  SELECT m.o_id, m.o_seq INTO v_msg, v_seq FROM hermes_append_message(v_session, 'assistant', p_reply, p_admission, p_interrupted, p_usage, NULL, NULL, NULL) m;
  v_pending := NOT (v_adm.platform = ANY(p_pulled));
  INSERT INTO delivery_obligations (id, admission_id, agent_id, session_id, message_id, platform, target, content, state, delivered_at)
    VALUES (gen_random_uuid(), p_admission, v_adm.agent_id, v_session, v_msg, v_adm.platform, v_adm.reply_target, p_reply,
            CASE WHEN v_pending THEN 'pending'::delivery_state ELSE 'delivered'::delivery_state END,
            CASE WHEN v_pending THEN NULL ELSE now() END)
    RETURNING id INTO v_ob;
  UPDATE admissions SET state = 'terminal', outcome = p_outcome, error = p_error, finished_at = now() WHERE id = p_admission;
  UPDATE sessions SET shutdown_cuts = 0, state = CASE WHEN state = 'resume_pending' THEN 'active'::session_state ELSE state END
    WHERE id = v_session AND (shutdown_cuts > 0 OR state = 'resume_pending');
  IF p_prompt IS NOT NULL THEN
    UPDATE sessions SET system_prompt = p_prompt, prompt_identity = p_identity WHERE id = v_session;
  END IF;
  IF p_usage_rows IS NOT NULL THEN
    INSERT INTO model_call_usage (agent_id, profile_key, session_id, user_id, admission_id, provider, model, input_tokens, output_tokens,
                                  cache_read_tokens, cache_write_tokens, reasoning_tokens, cost_usd, cost_status, task)
      SELECT r.agent_id, r.profile_key, r.session_id, r.user_id, r.admission_id, r.provider, r.model, r.input_tokens, r.output_tokens,
             r.cache_read_tokens, r.cache_write_tokens, r.reasoning_tokens, r.cost_usd, r.cost_status, r.task
      FROM jsonb_to_recordset(p_usage_rows) AS r(agent_id uuid, profile_key text, session_id uuid, user_id uuid, admission_id uuid, provider text,
           model text, input_tokens integer, output_tokens integer, cache_read_tokens integer, cache_write_tokens integer, reasoning_tokens integer,
           cost_usd numeric, cost_status text, task text);
  END IF;
  IF p_then = 'next' THEN
    v_next := hermes_claim_next(v_session, p_owner, p_epoch);
  END IF;
  IF p_then = 'release' OR (p_then = 'next' AND v_next IS NULL) THEN
    UPDATE session_leases SET owner_instance_id = NULL, expires_at = NULL WHERE session_id = v_session AND owner_instance_id = p_owner AND epoch = p_epoch;
  END IF;
  RETURN QUERY SELECT v_ob, v_pending, v_msg, v_next, p_then <> 'keep' AND v_next IS NULL;
END $$;
