-- A cut turn's `resume` admission runs before the session's messages admitted while the cut turn
-- ran (their seq is lower than the resume's): the session answers in the order it was asked.
-- A resume exists only while the session is `resume_pending` (cutTurn sets both; claiming the
-- resume ends it), so the check costs one primary-key read and the usual claim stays an index
-- scan in seq order.
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
    WHERE g.session_id = p_session AND g.admission_id = r.id ORDER BY g.created_at LIMIT 1));
END $$;
