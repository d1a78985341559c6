-- A sign-up is a login that carries the company it will create: the company and its owner's
-- membership are made only when the code mailed to the address is entered, so signing up with
-- someone else's address attaches nothing to them.
ALTER TABLE logins ADD COLUMN signup_company_name TEXT;
ALTER TABLE logins ADD COLUMN signup_owner_name TEXT;
-- How the email about an invoice or an invitation went: PENDING until tried, then SENT or
-- FAILED with a reason fit to show the merchant. NULL on rows from before this migration.
ALTER TABLE invoices ADD COLUMN email_status TEXT;
ALTER TABLE invoices ADD COLUMN email_error TEXT;
ALTER TABLE invitations ADD COLUMN email_status TEXT;
ALTER TABLE invitations ADD COLUMN email_error TEXT;
