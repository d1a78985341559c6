"""Edges to the outside world: mail, message broker, card processor, object storage."""
