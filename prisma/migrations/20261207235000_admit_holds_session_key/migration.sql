-- hermes_admit holds the session key's binding until the admission commits. A message admitted
-- while /new committed could read the old binding, then be inserted into the session /new had just
-- ended, after /new dropped that session's queue: it stayed queued there and ran in the conversation
-- the user had left. Now such a message waits for /new and lands in the new session (or, admitted
-- first, is dropped with the old queue, as /new says). The /new path itself locks the key row
-- FOR UPDATE before its own admission (refusals.ts), so two /new at once queue instead of deadlocking.
--
-- It also says how many messages already wait in the session (o_queued_ahead), so the gateway can
-- bound one conversation's queue without another round trip.

DROP FUNCTION hermes_admit(uuid, uuid, text, text, text, text, text, admission_intent, text, jsonb, jsonb, jsonb);
CREATE FUNCTION hermes_admit(p_id uuid, p_agent uuid, p_platform text, p_key text, p_user text, p_display text,
    p_event text, p_intent admission_intent, p_content text, p_history jsonb, p_target jsonb, p_trace jsonb)
    RETURNS TABLE (o_admission uuid, o_session uuid, o_user uuid, o_duplicate boolean, o_clarify_waiting boolean, o_queued_ahead int) LANGUAGE plpgsql AS $$
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
      RETURN QUERY SELECT a.id, a.session_id, a.user_id, true, NULL::boolean, NULL::int FROM inbound_events e JOIN admissions a ON a.id = e.admission_id
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
  -- The key's session, held bound (FOR SHARE) until this admission commits: a /new committing at the
  -- same moment either waits for it (and drops it with the old session's queue) or has already rebound
  -- the key (the lock waits for it, the re-check fails, and the new binding is read).
  LOOP
    SELECT k.session_id, s.state INTO v_session, v_state FROM session_keys k JOIN sessions s ON s.id = k.session_id
      WHERE k.agent_id = p_agent AND k.key = p_key;
    EXIT WHEN v_session IS NULL OR v_state = 'suspended';
    PERFORM 1 FROM session_keys k WHERE k.agent_id = p_agent AND k.key = p_key AND k.session_id = v_session FOR SHARE;
    EXIT WHEN FOUND;
  END LOOP;
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
      AND c.user_id IS NOT DISTINCT FROM v_user AND c.expires_at > now()),
    -- Messages already waiting in the session, counted up to 1 000 (an index range of at most that):
    -- the gateway answers one past HERMES_MAX_QUEUED_PER_SESSION instead of queueing it.
    (SELECT count(*)::int FROM (SELECT 1 FROM admissions q WHERE q.session_id = v_session AND q.state = 'queued' AND q.id <> p_id LIMIT 1000) ahead);
END $$;
