-- 1. A cut turn's `resume` admission runs before the session's messages admitted while the cut turn
-- ran (their seq is lower than the resume's): the session answers in the order it was asked.
-- A resume exists only while the session is `resume_pending` (cutTurn sets both; claiming the
-- resume ends it), so the check costs one primary-key read and the usual claim stays an index
-- scan in seq order. The claimed admission also carries the clarify question it answered
-- (`answered_clarification`: id, the asking admission, whether its turn took the answer; NULL when
-- it answered none), so the turn needs no read of its own for it.
CREATE OR REPLACE FUNCTION hermes_claim_next(p_session uuid, p_owner uuid, p_epoch bigint) RETURNS jsonb LANGUAGE plpgsql AS $$
DECLARE
  r admissions;
  v_next uuid;
BEGIN
  IF EXISTS (SELECT 1 FROM sessions WHERE id = p_session AND state = 'resume_pending') THEN
    SELECT id INTO v_next FROM admissions WHERE session_id = p_session AND state = 'queued' AND intent = 'resume'
      ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED;
  END IF;
  IF v_next IS NULL THEN
    SELECT id INTO v_next FROM admissions WHERE session_id = p_session AND state = 'queued' ORDER BY seq LIMIT 1 FOR UPDATE SKIP LOCKED;
  END IF;
  IF v_next IS NULL THEN
    RETURN NULL;
  END IF;
  UPDATE admissions SET state = 'started', owner_instance_id = p_owner, owner_epoch = p_epoch, started_at = now(), updated_at = now()
    WHERE id = v_next
    RETURNING * INTO r;
  IF r.intent = 'resume' THEN
    UPDATE sessions SET state = 'active' WHERE id = p_session AND state = 'resume_pending';
  ELSE
    PERFORM hermes_append_message(p_session, 'user', r.content, r.id, false, NULL, NULL, NULL, NULL);
  END IF;
  RETURN to_jsonb(r) || jsonb_build_object('own_signal', (
    SELECT jsonb_build_object('kind', g.kind, 'consumed', g.consumed_at IS NOT NULL) FROM session_signals g
    WHERE g.session_id = p_session AND g.admission_id = r.id ORDER BY g.created_at LIMIT 1),
    'answered_clarification', (
    SELECT jsonb_build_object('id', c.id, 'admission_id', c.admission_id, 'consumed', c.consumed_at IS NOT NULL) FROM clarifications c
    WHERE c.answered_by_admission = r.id LIMIT 1));
END $$;

-- 2. hermes_admit also says whether a clarify question of this user waits in the session
-- (`o_clarify_waiting`; NULL for a duplicate, which is not checked): the gateway records a
-- plain message as its answer only then, instead of trying with a statement of its own for every
-- message. Otherwise as before (20261203130000_hot_path_functions).
DROP FUNCTION hermes_admit(uuid, uuid, text, text, text, text, text, admission_intent, text, jsonb, jsonb, jsonb);
CREATE FUNCTION hermes_admit(p_id uuid, p_agent uuid, p_platform text, p_key text, p_user text, p_display text,
    p_event text, p_intent admission_intent, p_content text, p_history jsonb, p_target jsonb, p_trace jsonb)
    RETURNS TABLE (o_admission uuid, o_session uuid, o_user uuid, o_duplicate boolean, o_clarify_waiting boolean) LANGUAGE plpgsql AS $$
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
      RETURN QUERY SELECT a.id, a.session_id, a.user_id, true, NULL::boolean FROM inbound_events e JOIN admissions a ON a.id = e.admission_id
        WHERE e.agent_id = p_agent AND e.source = p_platform AND e.event_id = p_event;
      IF NOT FOUND THEN
        RAISE EXCEPTION 'inbound event %/% exists without its admission', p_platform, p_event;
      END IF;
      RETURN;
    END IF;
  END IF;
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
  RETURN QUERY SELECT p_id, v_session, v_user, false, EXISTS (
    SELECT 1 FROM clarifications c WHERE c.session_id = v_session AND c.status = 'pending'
      AND c.user_id IS NOT DISTINCT FROM v_user AND c.expires_at > now());
END $$;
