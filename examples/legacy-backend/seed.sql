-- Deterministic seed data: fixed ids and timestamps, so tests can count and look rows up.
-- Explicit ids mean the serial sequences must be moved past them (see the end), or the app's
-- own inserts (POST /users) would collide with id 1.

INSERT INTO users (id, email, full_name, created_at) VALUES
  (1, 'ada@example.com',      'Ada Lovelace',      '2023-01-10 09:00:00+00'),
  (2, 'grace@example.com',    'Grace Hopper',      '2023-02-14 10:30:00+00'),
  (3, 'linus@example.com',    'Linus Torvalds',    '2023-03-01 08:15:00+00'),
  (4, 'margaret@example.com', 'Margaret Hamilton', '2023-04-22 16:45:00+00'),
  (5, 'early@example.com',    NULL,                '2022-11-30 12:00:00+00');  -- signed up before names were asked

INSERT INTO accounts (id, user_id, plan, balance_cents, created_at) VALUES
  (1, 1,    'pro',   2500, '2023-01-10 09:05:00+00'),
  (2, 2,    'free',     0, '2023-02-14 10:31:00+00'),
  (3, 3,    'team', 12000, '2023-03-01 08:20:00+00'),
  (4, 3,    'free',     0, '2023-06-01 08:00:00+00'),  -- a second account for the same user
  (5, 4,    'pro',   -900, '2023-04-22 16:50:00+00'),  -- overdrawn
  (6, NULL, 'team',     0, '2022-11-01 00:00:00+00');  -- the house account: no owner

INSERT INTO invoices (id, account_id, amount_cents, status, issued_at) VALUES
  (1, 1, 1500, 'paid', '2023-02-01 00:00:00+00'),
  (2, 1, 1500, 'paid', '2023-03-01 00:00:00+00'),
  (3, 1, 1500, 'open', '2023-04-01 00:00:00+00'),
  (4, 3, 4900, 'paid', '2023-04-01 00:00:00+00'),
  (5, 3, 4900, 'open', '2023-05-01 00:00:00+00'),
  (6, 5, 1500, 'open', '2023-05-01 00:00:00+00'),
  (7, 5,  900, 'void', '2023-05-15 00:00:00+00'),
  (8, 6,    0, 'paid', '2023-01-01 00:00:00+00');

INSERT INTO sessions (id, title, starts_at, capacity, host_user_id) VALUES
  ('1c6f3b2e-8d4a-4f0e-9b1a-0a5d2c7e4f01', 'Intro to PostgreSQL',   '2024-03-05 17:00:00+00', 20,   1),
  ('2b7e4c3f-9e5b-4a1f-8c2b-1b6e3d8f5a02', 'COBOL for the curious', '2024-03-12 17:00:00+00', 12,   2),
  ('3a8f5d40-af6c-4b20-9d3c-2c7f4e906b03', 'Kernel hacking night',  '2024-04-02 18:00:00+00', NULL, 3),
  ('4d906e51-b07d-4c31-8e4d-3d805fa17c04', 'Open office hours',     '2024-04-09 12:00:00+00', 5,    NULL);  -- host left

INSERT INTO session_attendees (session_id, user_id, registered_at, checked_in_at) VALUES
  ('1c6f3b2e-8d4a-4f0e-9b1a-0a5d2c7e4f01', 2, '2024-02-20 10:00:00+00', '2024-03-05 16:55:00+00'),
  ('1c6f3b2e-8d4a-4f0e-9b1a-0a5d2c7e4f01', 3, '2024-02-21 11:00:00+00', NULL),
  ('1c6f3b2e-8d4a-4f0e-9b1a-0a5d2c7e4f01', 5, '2024-02-22 12:00:00+00', '2024-03-05 17:02:00+00'),
  ('2b7e4c3f-9e5b-4a1f-8c2b-1b6e3d8f5a02', 1, '2024-03-01 09:00:00+00', NULL),
  ('2b7e4c3f-9e5b-4a1f-8c2b-1b6e3d8f5a02', 4, '2024-03-02 09:30:00+00', '2024-03-12 16:58:00+00'),
  ('3a8f5d40-af6c-4b20-9d3c-2c7f4e906b03', 1, '2024-03-20 14:00:00+00', NULL);

-- Move the sequences past the explicit ids.
SELECT setval(pg_get_serial_sequence('users', 'id'),    (SELECT max(id) FROM users));
SELECT setval(pg_get_serial_sequence('accounts', 'id'), (SELECT max(id) FROM accounts));
SELECT setval(pg_get_serial_sequence('invoices', 'id'), (SELECT max(id) FROM invoices));
