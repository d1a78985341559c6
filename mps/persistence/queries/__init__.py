"""Read queries, one module per resource. Every query that returns company data takes the
company id (and mode) as a condition: tenant isolation is in the SQL, not left to callers."""
