-- State machines of the ledger (ARCHITECTURE §4), enforced by the database itself so that no
-- client, however buggy, can skip a step. Prisma's schema diff does not model functions or
-- triggers, so these live only here and `hermes migrate` applies them like any other migration.

CREATE FUNCTION hermes_admission_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state = OLD.state THEN
    RETURN NEW;
  END IF;
  IF (OLD.state, NEW.state) IN (
    ('queued'::admission_state, 'started'::admission_state),
    ('queued', 'terminal'),      -- discarded, or merged into another turn before it started
    ('started', 'terminal'),
    ('started', 'unknown'),      -- the owner died mid-turn: never re-run automatically
    ('unknown', 'terminal')      -- only a human (/discard, /retry) or unattended settlement
  ) THEN
    NEW.updated_at := now();
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'admission %: illegal transition % -> %', OLD.id, OLD.state, NEW.state
    USING ERRCODE = 'check_violation';
END $$;

CREATE TRIGGER admissions_state_machine BEFORE UPDATE OF state ON "admissions"
  FOR EACH ROW EXECUTE FUNCTION hermes_admission_transition();

CREATE FUNCTION hermes_delivery_transition() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.state = OLD.state THEN
    RETURN NEW;
  END IF;
  IF (OLD.state, NEW.state) IN (
    ('pending'::delivery_state, 'attempting'::delivery_state),
    ('pending', 'abandoned'),
    ('attempting', 'delivered'),
    ('attempting', 'failed'),
    ('attempting', 'pending'),   -- flood control: wait for not_before without spending an attempt
    ('attempting', 'abandoned'),
    ('failed', 'attempting'),
    ('failed', 'abandoned')
  ) THEN
    NEW.updated_at := now();
    RETURN NEW;
  END IF;
  RAISE EXCEPTION 'delivery obligation %: illegal transition % -> %', OLD.id, OLD.state, NEW.state
    USING ERRCODE = 'check_violation';
END $$;

CREATE TRIGGER delivery_obligations_state_machine BEFORE UPDATE OF state ON "delivery_obligations"
  FOR EACH ROW EXECUTE FUNCTION hermes_delivery_transition();

-- Terminal rows never change state again.
CREATE FUNCTION hermes_terminal_is_final() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% %: state % is final', TG_TABLE_NAME, OLD.id, OLD.state USING ERRCODE = 'check_violation';
END $$;

CREATE TRIGGER admissions_terminal_final BEFORE UPDATE OF state ON "admissions"
  FOR EACH ROW WHEN (OLD.state = 'terminal' AND NEW.state <> 'terminal') EXECUTE FUNCTION hermes_terminal_is_final();
CREATE TRIGGER delivery_obligations_final BEFORE UPDATE OF state ON "delivery_obligations"
  FOR EACH ROW WHEN (OLD.state IN ('delivered', 'abandoned') AND NEW.state <> OLD.state) EXECUTE FUNCTION hermes_terminal_is_final();

-- Messages are append-only.
CREATE FUNCTION hermes_append_only() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  RAISE EXCEPTION '% is append-only', TG_TABLE_NAME USING ERRCODE = 'check_violation';
END $$;

CREATE TRIGGER messages_append_only BEFORE UPDATE ON "messages"
  FOR EACH ROW EXECUTE FUNCTION hermes_append_only();
