"""make test-docs: every example of the docs run against a real server.

scripts/test-docs.py is the entry point; page.py says what runs and how."""
