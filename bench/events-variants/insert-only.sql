-- The event row with constant context and no record: the floor of a trigger that writes a row (README.md).
CREATE OR REPLACE FUNCTION authstrap.data_event() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
  INSERT INTO "authstrap_event" ("type", "organizationId", "userId", "actorType", "actorId", "entity", "entityId", "data")
  VALUES (TG_ARGV[0] || '.created', NEW."organizationId", NULL, 'user', NULL, TG_ARGV[1], NEW."id"::text, '{}'::jsonb);
  RETURN NULL;
END
$$;
