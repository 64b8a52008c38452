-- The generated function's INSERT branch without the record: who and from where, the maintenance
-- switch and the endpoint check, and `data` empty, the organization read from the row. What a
-- "thin" event (the record's id only, as Stripe's v2 events) would cost (README.md).
CREATE OR REPLACE FUNCTION authstrap.data_event() RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = public, pg_temp AS $$
DECLARE
  request jsonb := COALESCE(NULLIF(current_setting('authstrap.request', true), '')::jsonb, '{}'::jsonb);
  was_maintenance text := COALESCE(current_setting('authstrap.maintenance', true), '');
  key_id text := NULLIF(current_setting('authstrap.key_id', true), '');
  organization_id uuid := NEW."organizationId";
  setting text;
  event_id uuid;
  has_endpoints boolean;
BEGIN
  setting := set_config('authstrap.maintenance', 'on', true);
  INSERT INTO "authstrap_event" ("type", "organizationId", "userId", "actorType", "actorId", "entity", "entityId", "data", "requestId", "ipAddress", "userAgent")
  VALUES (TG_ARGV[0] || '.created', organization_id, NULL, COALESCE(request->>'actorType', CASE WHEN authstrap.user_id() IS NOT NULL THEN 'user' WHEN key_id IS NOT NULL THEN 'machine_key' ELSE 'system' END), COALESCE(request->>'actorId', authstrap.user_id()::text, key_id), TG_ARGV[1], NEW."id"::text, '{}'::jsonb, request->>'requestId', request->>'ipAddress', left(request->>'userAgent', 512))
  RETURNING "id", EXISTS (SELECT FROM "authstrap_webhook_endpoint" w WHERE w."organizationId" = organization_id AND w."enabled") INTO event_id, has_endpoints;
  setting := set_config('authstrap.maintenance', was_maintenance, true);
  RETURN NULL;
END
$$;
