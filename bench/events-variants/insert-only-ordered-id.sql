-- insert-only.sql with a time-ordered id (its first 48 bits the time in ms, as a UUIDv7's): primary-key entries at the right edge (README.md).
CREATE OR REPLACE FUNCTION authstrap.data_event() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
BEGIN
  INSERT INTO "authstrap_event" ("id", "type", "organizationId", "userId", "actorType", "actorId", "entity", "entityId", "data")
  VALUES (encode(overlay(uuid_send(gen_random_uuid()) PLACING substring(int8send((extract(epoch FROM clock_timestamp()) * 1000)::bigint) FROM 3) FROM 1 FOR 6), 'hex')::uuid,
          TG_ARGV[0] || '.created', NEW."organizationId", NULL, 'user', NULL, TG_ARGV[1], NEW."id"::text, '{}'::jsonb);
  RETURN NULL;
END
$$;
