-- 0025_webhook_claims.sql - whose claim a pending webhook delivery is
-- under (api/webhook_send.c): each claim writes a fresh id here, and a
-- sender records its try's outcome only while the delivery is still
-- pending under its own claim. A sender that outlived its claim (stopped,
-- slow) can no longer turn a delivery another sender made back into
-- pending, nor record a try twice.

ALTER TABLE webhook_deliveries ADD COLUMN claim uuid;
