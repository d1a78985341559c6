-- Why a session was revoked, so that its token's refusal can say so: `mode_switch` when the
-- member switched the session to the other mode (POST /auth/session/mode opens a new session
-- and ends this one), NULL for a sign-out or a revocation older than this column.
ALTER TABLE sessions ADD COLUMN revoked_reason TEXT;
