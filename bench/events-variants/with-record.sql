-- insert-only.sql, and the record's JSON with its organization read from it (README.md).
CREATE OR REPLACE FUNCTION authstrap.data_event() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  data jsonb;
  organization_id uuid;
BEGIN
  data := jsonb_build_object('record', CASE WHEN TG_ARGV[2] = '{}' THEN to_jsonb(NEW) ELSE to_jsonb(NEW) - TG_ARGV[2]::text[] END);
  organization_id := (data->'record'->>TG_ARGV[3])::uuid;
  INSERT INTO "authstrap_event" ("type", "organizationId", "userId", "actorType", "actorId", "entity", "entityId", "data")
  VALUES (TG_ARGV[0] || '.created', organization_id, NULL, 'user', NULL, TG_ARGV[1], NEW."id"::text, data);
  RETURN NULL;
END
$$;
