"""agent-loop: the user-facing CLI."""
