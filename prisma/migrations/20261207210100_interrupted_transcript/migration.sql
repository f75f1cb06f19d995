-- What an interrupted turn leaves in the transcript is what the model said before the cut (its
-- partial text, marked interrupted), never the runtime's notice about it: the reply sent to the
-- user ("partial\n\n[interrupted: stopped by /stop]", "The turn was interrupted (…). Send your
-- message again or /retry.", "[SILENT]", …) used to be stored as the assistant's message, so the
-- model read it later as its own words. hermes_finish_turn takes `p_said`, the transcript's text
-- (NULL: the reply itself, as before; '': no assistant message at all, as a cut turn that said
-- nothing leaves none); the obligation still carries `p_reply`. Otherwise as in
-- 20261204190801_agent_stop_and_silence.
DROP FUNCTION hermes_finish_turn(uuid, uuid, bigint, admission_outcome, text, text, boolean, jsonb, jsonb, text[], text, text, text);
CREATE FUNCTION hermes_finish_turn(p_admission uuid, p_owner uuid, p_epoch bigint, p_outcome admission_outcome,
    p_reply text, p_error text, p_interrupted boolean, p_usage jsonb, p_usage_rows jsonb, p_pulled text[], p_then text,
    p_prompt text, p_identity text, p_said text)
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
  IF COALESCE(p_said, p_reply) <> '' THEN
    SELECT m.o_id, m.o_seq INTO v_msg, v_seq FROM hermes_append_message(v_session, 'assistant', COALESCE(p_said, p_reply), p_admission, p_interrupted, p_usage, NULL, NULL, NULL) m;
  END IF;
  -- A silent reply (a silence token) is kept in the transcript and never sent: settled delivered at once.
  v_pending := NOT (v_adm.platform = ANY(p_pulled)) AND NOT hermes_is_silent(p_reply);
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
