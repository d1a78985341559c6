-- Lists filtered by status, newest first, read only the rows of that status. With only
-- (company_id, mode, created_at, id) to go by, the dashboard Home's overdue invoices
-- (status = 'OVERDUE', limit 20) and the approvals awaiting a vote (status = 'PENDING') walked
-- the company's rows from the newest until the page was full: every invoice and every request
-- the company ever had whenever fewer than a page match, which is the usual case.
CREATE INDEX invoices_by_status ON invoices (company_id, mode, status, created_at, id);
CREATE INDEX approval_requests_by_status ON approval_requests (company_id, mode, status, created_at, id);
