"""Documents the service renders for people, such as invoice PDFs."""
