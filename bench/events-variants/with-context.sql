-- with-record.sql, and who and from where, from the transaction's settings, with the maintenance switch around the INSERT (README.md).
CREATE OR REPLACE FUNCTION authstrap.data_event() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  request jsonb := COALESCE(NULLIF(current_setting('authstrap.request', true), '')::jsonb, '{}'::jsonb);
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  key_id text := NULLIF(current_setting('authstrap.key_id', true), '');
  data jsonb;
  organization_id uuid;
  setting text;
BEGIN
  data := jsonb_build_object('record', CASE WHEN TG_ARGV[2] = '{}' THEN to_jsonb(NEW) ELSE to_jsonb(NEW) - TG_ARGV[2]::text[] END);
  organization_id := (data->'record'->>TG_ARGV[3])::uuid;
  setting := set_config('authstrap.maintenance', 'on', true);
  INSERT INTO "authstrap_event" ("type", "organizationId", "userId", "actorType", "actorId", "entity", "entityId", "data", "requestId", "ipAddress", "userAgent")
  VALUES (TG_ARGV[0] || '.created', organization_id, NULL, COALESCE(request->>'actorType', CASE WHEN authstrap.user_id() IS NOT NULL THEN 'user' WHEN key_id IS NOT NULL THEN 'machine_key' ELSE 'system' END), COALESCE(request->>'actorId', authstrap.user_id()::text, key_id), TG_ARGV[1], NEW."id"::text, data, request->>'requestId', request->>'ipAddress', left(request->>'userAgent', 512));
  setting := set_config('authstrap.maintenance', was_maintenance, true);
  RETURN NULL;
END
$$;
